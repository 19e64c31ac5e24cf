import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCli, startChildServer } from "../../bench/harness/child-server.js";
import { Code } from "../../src/reqlog-error.js";
import { minimalLog } from "../helpers/fixtures.js";
import { bearer, callError, createTestClient } from "../helpers/test-client.js";

const dir = mkdtempSync(join(tmpdir(), "reqlog-token-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("reqlog token", () => {
  it("creates, lists and revokes tokens that a running server honours", async () => {
    const db = join(dir, "tokens.db");
    const created = await runCli(["token", "create", "--db", db, "--scope", "read:logs", "--app", "forge", "--name", "dashboard"]);
    expect(created.code).toBe(0);
    const token = created.stdout.trim();
    expect(created.stdout).toMatch(/^rql_[0-9a-f]{16}_[A-Za-z0-9_-]{43}\n$/);

    const listed = await runCli(["token", "list", "--db", db]);
    expect(listed.stdout).toMatch(/^\s+1\s+active\s+read:logs\s+forge\s+\S+Z\s+dashboard$/m);
    expect(listed.stdout).not.toContain(token.slice(21));

    // With a token configured, a non-loopback address is allowed.
    const server = await startChildServer(["--listen", "0.0.0.0:0", "--db", db]);
    const client = createTestClient({ server: server.address.replace("0.0.0.0", "127.0.0.1") });
    try {
      const read = { appId: "forge" };
      await client.read(read, bearer(token));
      expect((await callError(client.read(read))).code).toBe(Code.UNAUTHENTICATED);
      const write = await callError(client.write({ log: [minimalLog()] }, bearer(token)));
      expect(write).toEqual({ code: Code.PERMISSION_DENIED, details: "this token lacks the write:logs scope", reason: "INVALID_REQUEST" });

      expect((await runCli(["token", "revoke", "--db", db, "1"])).stdout).toMatch(/^revoked token 1: it was the last active token\.\n/);
      const revoked = await callError(client.read(read, bearer(token)));
      expect(revoked.details).toBe("invalid or revoked access token");
    } finally {
      // Stopped before the client closes its connection (closed just before SIGTERM, it can hold the drain to the timeout).
      await server.stop();
      client.close();
    }
    expect((await runCli(["token", "list", "--db", db])).stdout).toMatch(/^\s+1\s+revoked\s+/m);
  });

  it("refuses an unknown scope and a revoke of nothing", async () => {
    const db = join(dir, "bad.db");
    const bad = await runCli(["token", "create", "--db", db, "--scope", "root"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe('reqlog: --scope: "root" is not one of read:logs, write:logs, admin\n');
    const none = await runCli(["token", "revoke", "--db", db, "7"]);
    expect(none.stderr).toBe("reqlog: no active token with id 7\n");
  });
});

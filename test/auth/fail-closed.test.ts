import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCli, startChildServer } from "../../bench/harness/child-server.js";
import { Code } from "../../src/reqlog-error.js";
import { minimalLog } from "../helpers/fixtures.js";
import { bearer, callError, createTestClient } from "../helpers/test-client.js";

const dir = mkdtempSync(join(tmpdir(), "reqlog-fail-closed-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const lastTokenMessage = [
  "revoked token 1: it was the last active token.",
  "A server listening on a non-loopback address now refuses every call until a token is created;",
  "one listening on loopback only now serves anyone who can connect to it.",
  "",
].join("\n");

describe("a server that needed a token to start", () => {
  it("keeps refusing calls when its last token is revoked, and says so; the revoke says what changed", async () => {
    const db = join(dir, "remote.db");
    const created = await runCli(["token", "create", "--db", db, "--scope", "admin"]);
    const token = created.stdout.trim();
    const server = await startChildServer(["--listen", "0.0.0.0:0", "--db", db, "--http-listen", "0.0.0.0:0"]);
    const client = createTestClient({ server: server.address.replace("0.0.0.0", "127.0.0.1") });
    const http = `http://${server.httpAddress.replace("0.0.0.0", "127.0.0.1")}`;
    try {
      await client.write({ log: [minimalLog()] }, bearer(token));
      expect((await runCli(["token", "revoke", "--db", db, "1"])).stdout).toBe(lastTokenMessage);

      const refused = await callError(client.read({ appId: "forge" }));
      expect(refused.code).toBe(Code.UNAUTHENTICATED);
      expect(refused.details).toBe(
        "no access token is active and this server needs one (it listens on 0.0.0.0:0, not loopback): " +
          "it refuses every call until a token is created (reqlog token create --scope …)",
      );
      expect((await callError(client.write({ log: [minimalLog({ resource: "/after" })] }))).code).toBe(Code.UNAUTHENTICATED);
      // The HTTP port too (Connect JSON), and OTLP/HTTP.
      const connect = await fetch(`${http}/reqlog.v1.LogService/Read`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ appId: "forge" }),
      });
      expect(connect.status).toBe(401);
      const otlp = await fetch(`${http}/v1/logs`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
      expect(otlp.status).toBe(401);

      // The server said what changed, once.
      const warnings = server.stderr().split("\n").filter((l) => l.includes("no access token is active"));
      expect(warnings).toHaveLength(1);
      expect(JSON.parse(warnings[0]!).level).toBe(40);

      // A new token serves again.
      const again = (await runCli(["token", "create", "--db", db, "--scope", "read:logs"])).stdout.trim();
      const page = await client.read({ appId: "forge" }, bearer(again));
      expect(page.log.map((l) => l.resource)).toEqual(["/api/v1/repos/alice/app"]);
    } finally {
      await server.stop();
      client.close();
    }
  });

  it("on loopback, serves anyone once the last token is revoked (local development), as the revoke says", async () => {
    const db = join(dir, "loopback.db");
    const token = (await runCli(["token", "create", "--db", db, "--scope", "admin"])).stdout.trim();
    const server = await startChildServer(["--listen", "127.0.0.1:0", "--db", db]);
    const client = createTestClient({ server: server.address });
    try {
      expect((await callError(client.read({ appId: "forge" }))).code).toBe(Code.UNAUTHENTICATED);
      await client.read({ appId: "forge" }, bearer(token));
      expect((await runCli(["token", "revoke", "--db", db, "1"])).stdout).toBe(lastTokenMessage);
      expect((await client.read({ appId: "forge" })).log).toEqual([]);
    } finally {
      await server.stop();
      client.close();
    }
  });
});

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, startChildServer, type ChildServer } from "../../bench/harness/child-server.js";
import { Code } from "../../src/reqlog-error.js";
import { openSqliteBackend } from "../../src/store/sqlite/sqlite-backend.js";
import { prepareRequestLog } from "../../src/write/prepare-request-log.js";
import { defaultLimits } from "../../src/limits.js";
import { bytesOnDisk, sqliteFiles } from "../helpers/disk-bytes.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { idOf, readAll } from "../helpers/read-all.js";
import { bearer, callError, createTestClient, type TestClient } from "../helpers/test-client.js";

/** A secret of the kind redaction does not know (an operator's own parameter), so that it is stored until deleted. */
const secret = (n: number) => `Leaked${n}Qx7Zt3`;

/** Requests from 203.0.113.9 (three) and 198.51.100.1 (one), each with the secret in its resource, referrer and line. */
const seed = () =>
  ["203.0.113.9", "203.0.113.9", "198.51.100.1", "203.0.113.9"].map((ip, i) =>
    minimalLog({
      requestId: rid(`d${i}`),
      ip,
      endTime: t0 + BigInt(i) * 1000n,
      status: 200,
      resource: `/api/v1/repos/alice/app/hooks/${i}?session=${secret(i)}`,
      referrer: `https://forge.example/settings?session=${secret(i)}`,
      userAgent: `agent-${secret(i)}`,
      line: [{ time: t0, level: 1, logMessage: `hook ${i} with session ${secret(i)}` }],
    }),
  );

describe("Delete through reqlog serve (SQLite)", () => {
  const folder = mkdtempSync(join(tmpdir(), "reqlog-delete-"));
  const db = join(folder, "reqlog.db");
  let server: ChildServer;
  let admin: string;
  let reader: string;
  let writer: string;
  let other: string;
  let client: TestClient;
  const cli = (...args: string[]) => runCli(["delete", "--server", server.address, "--token", admin, ...args]);

  beforeAll(async () => {
    const token = async (...args: string[]) => (await runCli(["token", "create", "--db", db, ...args])).stdout.trim();
    admin = await token("--scope", "admin", "--name", "privacy officer");
    reader = await token("--scope", "read:logs");
    writer = await token("--scope", "write:logs");
    other = await token("--scope", "admin", "--app", "other");
    server = await startChildServer(["--listen", "127.0.0.1:0", "--db", db, "--log-level", "info"]);
    client = createTestClient({ server: server.address });
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    client?.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it("refuses read:logs and write:logs tokens, and an admin token of another app", async () => {
    await client.write({ log: seed() }, bearer(writer));
    const request = { appId: "forge", ip: ["203.0.113.9"] };
    for (const token of [reader, writer]) {
      expect(await callError(client.delete(request, bearer(token)))).toEqual({
        code: Code.PERMISSION_DENIED,
        details: "this token lacks the admin scope",
        reason: "INVALID_REQUEST",
      });
    }
    expect((await callError(client.delete(request, bearer(other)))).details).toBe('this token is not allowed app "forge"');
    expect(await readAll({ read: (r) => client.read(r, bearer(reader)) }, "forge")).toHaveLength(4);
  });

  it("refuses an app alone, an address that is none and a window upside down, each naming the field", async () => {
    const refused = (request: Parameters<TestClient["delete"]>[0]) => callError(client.delete(request, bearer(admin)));
    expect(await refused({ appId: "forge" })).toEqual({
      code: Code.INVALID_ARGUMENT,
      details:
        'Delete names only app_id "forge": give a filter (request_id, ip, start_time/end_time, combined_log_regex), or set all to erase every request of the app',
      reason: "INVALID_REQUEST",
    });
    expect((await refused({ appId: "forge", ip: ["203.0.113.9", "10.0.0.0/33"] })).details).toMatch(/^ip\[1\] is "10\.0\.0\.0\/33": not an IPv4 or IPv6 address or CIDR range/);
    expect((await refused({ appId: "forge", startTime: 5n, endTime: 4n })).details).toBe("start_time (5) is after end_time (4)");
    expect((await refused({ appId: "forge", combinedLogRegex: "(" })).code).toBe(Code.INVALID_ARGUMENT);
  });

  it("reqlog delete counts with --dry-run, then erases; the text leaves the database and its WAL; the log says who, what and how many", async () => {
    const dry = await cli("--app", "forge", "--ip", "203.0.113.9", "--dry-run");
    expect(dry).toEqual({ code: 0, stdout: 'would delete 3 requests of app "forge" (dry run: nothing deleted)\n', stderr: "" });
    expect(Object.keys(bytesOnDisk(sqliteFiles(db), [secret(0), secret(3)]))).toEqual([secret(0), secret(3)]);

    const done = await cli("--app", "forge", "--ip", "203.0.113.0/24", "--from", new Date(Number(t0 / 1000n)).toISOString());
    expect(done).toEqual({ code: 0, stdout: 'deleted 3 requests of app "forge", with their app lines\n', stderr: "" });
    const left = await readAll({ read: (r) => client.read(r, bearer(reader)) }, "forge");
    expect(left.map(idOf)).toEqual(["d2"]);
    // The erased requests' resources, referrers, user agents and lines are in neither file; the kept one's are.
    expect(bytesOnDisk(sqliteFiles(db), [secret(0), secret(1), secret(3)])).toEqual({});
    expect(Object.keys(bytesOnDisk(sqliteFiles(db), [secret(2)]))).toEqual([secret(2)]);

    const audit = server
      .stderr()
      .split("\n")
      .filter((l) => l.includes('"msg":"delete'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(audit.map((a) => [a.msg, a.tokenName, a.app, a.ip, a.deleted, a.dryRun])).toEqual([
      ["delete dry run", "privacy officer", "forge", ["203.0.113.9"], 3, true],
      ["delete", "privacy officer", "forge", ["203.0.113.0/24"], 3, undefined],
    ]);
    expect(audit[1]!.startTime).toBe(String(t0));
    for (const n of [0, 1, 3]) expect(server.stderr()).not.toContain(secret(n));
  });

  it("erases every request of an app with --all, and none of another's", async () => {
    await client.write({ log: [minimalLog({ appId: "other", requestId: rid("o1") })] }, bearer(writer));
    expect((await cli("--app", "forge", "--all")).stdout).toBe('deleted 1 request of app "forge", with its app lines\n');
    expect(await readAll({ read: (r) => client.read(r, bearer(reader)) }, "forge")).toEqual([]);
    expect(await readAll({ read: (r) => client.read(r, bearer(reader)) }, "other")).toHaveLength(1);
  });
});

describe("retention on SQLite", () => {
  it("leaves no text of expired requests in the database or its WAL after compaction", async () => {
    const folder = mkdtempSync(join(tmpdir(), "reqlog-expire-"));
    const db = join(folder, "reqlog.db");
    const backend = openSqliteBackend({ path: db, readWorkers: 0, now: () => t0 + 10_000_000n });
    const signal = new AbortController().signal;
    try {
      await backend.store.write(seed().map((log) => prepareRequestLog(log, defaultLimits, "log", { latest: t0 + 10_000_000n })), signal);
      expect(Object.keys(bytesOnDisk(sqliteFiles(db), [secret(0)]))).toEqual([secret(0)]);
      expect(await backend.maintenance.expire(t0 + 2500n, 1000, signal)).toBe(3);
      await backend.maintenance.compact(t0 + 10_000_000n, signal);
      expect(bytesOnDisk(sqliteFiles(db), [secret(0), secret(1), secret(2)])).toEqual({});
      expect(Object.keys(bytesOnDisk(sqliteFiles(db), [secret(3)]))).toEqual([secret(3)]);
    } finally {
      await backend.close();
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

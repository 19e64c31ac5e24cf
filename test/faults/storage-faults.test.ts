import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { RequestLog } from "../../gen/reqlog/v1/log_service_pb.js";
import { runCli } from "../../bench/harness/child-server.js";
import { Code } from "../../src/reqlog-error.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { type CallFailure, callError } from "../helpers/test-client.js";
import { useTestServer } from "../helpers/test-server.js";

const dir = mkdtempSync(join(tmpdir(), "reqlog-faults-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const batch = (from: number, n: number): RequestLog[] =>
  Array.from({ length: n }, (_, i) =>
    // A long resource of its own, so the file grows with every batch (a user agent, or a constant start of a resource, is stored once for all).
    minimalLog({ requestId: rid(`r${from + i}`), endTime: t0 + BigInt(from + i), resource: `/${from + i}/${"x".repeat(400)}` }),
  );

describe("storage faults", () => {
  const ts = useTestServer();
  const count = async (appId: string) => (await ts.read({ appId, count: 1000n })).log.length;

  it("answers a full disk with UNAVAILABLE, keeps serving reads and stored data, and resumes writes after", async () => {
    await ts.write(...batch(0, 100));
    // The disk "fills": the file may not grow past its size now.
    const pages = ts.db.pragma("page_count", { simple: true }) as number;
    ts.db.pragma(`max_page_count = ${pages}`);
    let refused: CallFailure | undefined;
    for (let i = 1; i < 50 && !refused; i++) {
      refused = await callError(ts.write(...batch(i * 100, 100))).catch(() => undefined);
    }
    expect(refused).toEqual({ code: Code.UNAVAILABLE, details: "storage is full, retry later", reason: "STORAGE_ERROR" });
    // A new app's first write fails while the disk is full (its app row is rolled back with it).
    const lateApp = () => ts.write(...batch(200_000, 50).map((l) => ({ ...l, appId: "late" })));
    expect((await callError(lateApp())).code).toBe(Code.UNAVAILABLE);

    const before = await count("forge");
    expect(before).toBeGreaterThanOrEqual(100);
    expect(ts.db.pragma("integrity_check", { simple: true })).toBe("ok");

    ts.db.pragma("max_page_count = 1073741823");
    await ts.write(...batch(100_000, 100));
    expect(await count("forge")).toBe(before + 100);
    // The retried write of the new app is stored under that app, not under a key that was rolled back.
    await lateApp();
    expect(await count("late")).toBe(50);
  });

  it("answers writes to a read-only database with UNAVAILABLE and resumes when it is writable again", async () => {
    await ts.write(...batch(0, 3));
    ts.db.pragma("query_only = ON");
    const err = await callError(ts.write(...batch(10, 3)));
    expect(err).toEqual({ code: Code.UNAVAILABLE, details: "storage is read-only, retry later", reason: "STORAGE_ERROR" });
    expect(await count("forge")).toBe(3);
    ts.db.pragma("query_only = OFF");
    await ts.write(...batch(10, 3));
    expect(await count("forge")).toBe(6);
  });

  it("refuses to start on a file that is not a database, saying so", async () => {
    const path = join(dir, "corrupt.db");
    writeFileSync(path, "this is not an SQLite database, just some text that is long enough to look like a header".repeat(100));
    const { code, stderr } = await runCli(["serve", "--listen", "127.0.0.1:0", "--db", path]);
    expect(code).toBe(2);
    expect(stderr).toBe("reqlog: file is not a database\n");
  });
});

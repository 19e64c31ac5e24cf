import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { defaultLimits } from "../../src/limits.js";
import { planQuery } from "../../src/query/logsql/plan-query.js";
import { migrations } from "../../src/store/sqlite/migrations/index.js";
import { prepareRequestLog } from "../../src/write/prepare-request-log.js";
import type { RequestLog } from "../../gen/reqlog/v1/log_service_pb.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { useSqliteFiles } from "../helpers/sqlite-files.js";

const signal = new AbortController().signal;
const files = useSqliteFiles();

const prepared = (logs: RequestLog[]) => logs.map((log) => prepareRequestLog(log, defaultLimits, "log"));
const open = (path: string) => files.open({ path, readWorkers: 0 });

/** 400 requests (every 100th a 503, every 200th from 10.0.0.2), stored by a database of version 8 (no status index). */
async function version8Database(): Promise<string> {
  const path = join(files.folder("reqlog-m009-"), "old.db");
  const backend = open(path);
  const logs = Array.from({ length: 400 }, (_, i) =>
    minimalLog({ requestId: rid(`r${i}`), endTime: t0 + BigInt(i) * 1000n, status: i % 100 === 7 ? 503 : 200, ip: i % 200 === 7 ? "10.0.0.2" : "10.0.0.1" }),
  );
  await backend.store.write(prepared(logs), signal);
  await files.close(backend);
  // Version 8 had no such index: what 009 finds on a database of before it.
  const db = new Database(path);
  db.exec("DROP INDEX requests_by_status");
  db.pragma("user_version = 8");
  db.close();
  return path;
}

describe("migration 009 (the status index)", () => {
  it("indexes the stored requests by status, and a status filter reads only their rows, whole within a small budget", async () => {
    const backend = open(await version8Database());
    expect(backend.db.pragma("user_version", { simple: true })).toBe(migrations.at(-1)!.version);
    const columns = backend.db.prepare("SELECT name FROM pragma_index_info('requests_by_status') ORDER BY seqno").pluck().all();
    expect(columns).toEqual(["app_key", "status", "sort_time"]);

    const query = (text: string, readScanRows: number) =>
      backend.store.query(planQuery({ appId: "forge", text }, { ...defaultLimits, readScanRows }, Number(t0) + 3_600_000_000), signal);
    // 4 of the 400 are 503s: the status index gives those 4 (scanned), all of them though the budget is 100 rows.
    const byIp = await query("status:>=500 | stats by (ip) count() as n", 100);
    expect(byIp).toMatchObject({ rows: [["10.0.0.1", 2], ["10.0.0.2", 2]], scanned: 4, cut: false });
    expect(byIp.total).toBeUndefined();
    const ids = await query("status:in(502, 503) | fields request_id", 100);
    expect(ids.rows).toEqual([["r307"], ["r207"], ["r107"], ["r7"]]);
    expect(ids.total).toBeUndefined();
    // A status most requests have: the time index within the budget, as before (partial, and says of how many).
    const most = await query("status:200 | stats count() as n", 100);
    expect(most.total).toBe(400);

    // Writes after it keep the index: a 503 rewritten as a 200 leaves the 5xx answer.
    await backend.store.write(prepared([minimalLog({ requestId: rid("r7"), endTime: t0 + 7000n, status: 200, ip: "10.0.0.1" })]), signal);
    expect((await query("status:>=500 | stats count() as n", 100)).rows).toEqual([[3]]);
  });
});

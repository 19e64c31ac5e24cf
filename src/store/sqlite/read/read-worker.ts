/**
 * A read worker (run by the piscina pool in read-pool.ts): a thread with its
 * own connection to the database file that runs Read and Stats plans, so a
 * long scan never holds the event loop (and with it the writers) back. WAL lets it read
 * while the main thread writes. It never throws: a refusal or a storage
 * failure comes back as a value, so that a rejected task means only one
 * thing to the pool: the thread died.
 */
import { toBinary } from "@bufbuild/protobuf";
import Database from "better-sqlite3";
import { workerData } from "node:worker_threads";
import { RequestLogSchema } from "../../../../gen/reqlog/v1/log_service_pb.js";
import type { ReadPlan } from "../../../query/read-plan.js";
import type { StatsPlan } from "../../../query/stats-plan.js";
import { ReqlogError } from "../../../reqlog-error.js";
import type { SearchIndexUse } from "./snapshot-paging.js";
import { createSqliteReader } from "./sqlite-reader.js";
import { createStatsReader } from "../stats/sqlite-stats.js";
import { type PackedStats, packStats } from "./stats-result-codec.js";
import type { QueryPlan } from "../../../query/logsql/plan-query.js";
import type { QueryOutcome } from "./query-reader.js";

/** A Read, Stats or Query plan, and a flag the main thread sets to 1 (at index 0) when the call is cancelled. */
export type ReadTask = ({ plan: ReadPlan } | { stats: StatsPlan } | { query: QueryPlan }) & { cancel: Int32Array };

export type ReadTaskResult =
  | {
      records: { bytes: Uint8Array; cursor: Uint8Array }[];
      next?: Uint8Array;
      lastSortTime?: bigint;
      scanned?: number;
      cancelled?: boolean;
    }
  | { stats: PackedStats }
  | { answer: QueryOutcome }
  | { cancelled: true }
  | { refused: { code: number; reason: ReqlogError["reason"]; message: string } }
  | { error: { message: string; code?: string } };

const { path, searchIndex } = workerData as { path: string; searchIndex: SearchIndexUse };
const db = new Database(path, { fileMustExist: true });
db.pragma("busy_timeout = 5000");
db.pragma("query_only = ON");
// A page cache of its own for each worker: a search walks the index's lists
// and the candidates' rows. (better-sqlite3's build already defaults to
// ~16 MB, not SQLite's 2 MB; set here so the size does not hang on the build.)
db.pragma("cache_size = -16384");
const reader = createSqliteReader(db, searchIndex);
const stats = createStatsReader(db);

export default function read(task: ReadTask): ReadTaskResult {
  try {
    // Queued while its caller went away: nothing to answer.
    if (Atomics.load(task.cancel, 0) === 1) return { cancelled: true };
    if ("stats" in task) return { stats: packStats(stats(task.stats, task.cancel)) };
    if ("query" in task) return { answer: reader.query(task.query, task.cancel) };
    const result = reader.read(task.plan, task.cancel);
    return {
      records: result.records.map((r) => ({ bytes: toBinary(RequestLogSchema, r.log), cursor: r.cursor })),
      next: result.next,
      lastSortTime: result.lastSortTime,
      scanned: result.scanned,
      cancelled: result.cancelled,
    };
  } catch (err) {
    if (err instanceof ReqlogError) return { refused: { code: err.code, reason: err.reason, message: err.message } };
    const e = err as { message?: string; code?: string };
    return { error: { message: e.message ?? String(err), code: e.code } };
  }
}

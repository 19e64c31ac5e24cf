import type Database from "better-sqlite3";
import type { RequestLog } from "../../../../gen/reqlog/v1/log_service_pb.js";
import type { ReadPlan } from "../../../query/read-plan.js";
import type { ReadResult } from "../../store.js";
import { createAppLookup } from "../rows/keys.js";
import { createLineLoader, linesOf } from "./line-loader.js";
import { createPlanSql } from "./plan-sql.js";
import { rowToRequestLog } from "../rows/stored-record.js";
import { createScanBudget } from "./scan-budget.js";
import { createSnapshotPaging, type SearchIndexUse } from "./snapshot-paging.js";
import { createTailChanges } from "./tail-changes.js";
import { createQueryReader, type QueryOutcome } from "./query-reader.js";
import type { QueryPlan } from "../../../query/logsql/plan-query.js";

/** A Read page, and whether its call was cancelled while it scanned (then it is not to be answered). */
type ReadOutcome = ReadResult & { cancelled?: boolean };

/**
 * The read side of the SQLite backend on one connection: Read pages, Tail's
 * changes and records by id. It runs on the writer's connection (Tail,
 * request ids, Reads without workers) and on each read worker's own.
 */
export function createSqliteReader(db: Database.Database, searchIndex: SearchIndexUse = "auto"): SqliteReader {
  const appKey = createAppLookup(db);
  const sql = createPlanSql(db);
  const lines = createLineLoader(db);
  const budget = createScanBudget(db);
  const paging = createSnapshotPaging(db, sql, lines, budget, searchIndex);
  const tail = createTailChanges(db, sql, lines);
  const queries = createQueryReader(db, sql, budget, searchIndex);
  // One read transaction per Read: its statements, and the dictionary its
  // search plan looks pieces up in, all see the same committed state.
  const snapshot = db.transaction(<T>(work: () => T): T => work());
  const inSnapshot = <T>(work: () => T): T => {
    sql.begin();
    return snapshot(work) as T;
  };

  return {
    /** One Read page; `cancel` (set to 1 by another thread) stops the scan as a spent budget would. */
    read(plan: ReadPlan, cancel?: Int32Array): ReadOutcome {
      return budget.run(plan, cancel, () =>
        inSnapshot(() => {
          const result = paging.read(appKey(plan.appId), plan);
          const read = { ...result, scanned: result.scanned ?? budget.examined };
          return budget.cancelled ? { ...read, cancelled: true } : read;
        }),
      );
    },
    /** A query's answer from the rows (docs/query.md); `cancel` stops its scan as a spent budget would. */
    query(plan: QueryPlan, cancel?: Int32Array): QueryOutcome {
      return budget.run(plan, cancel, () => inSnapshot(() => queries.query(plan)));
    },
    changes(plan: ReadPlan, afterSeq: bigint, limit: number) {
      return budget.run(plan, undefined, () => inSnapshot(() => tail.changes(appKey(plan.appId), plan, afterSeq, limit)));
    },
    currentSeq: tail.currentSeq,
    /** Stored records of these ids (those that exist), in the order given, once each, with all their lines. */
    getRequests(appId: string, requestIds: readonly Uint8Array[]): RequestLog[] {
      const app = appKey(appId);
      if (app === undefined) return [];
      return lines.recordRows(app, requestIds).map((row) => {
        const log = rowToRequestLog(row);
        log.line = linesOf(row.lines as Buffer | null).lines;
        return log;
      });
    },
  };
}

export interface SqliteReader {
  /** One Read page; `cancel` (set to 1 by another thread) stops the scan as a spent budget would. */
  read(plan: ReadPlan, cancel?: Int32Array): ReadOutcome;
  /** A query's answer from the rows (docs/query.md); `cancel` stops its scan as a spent budget would. */
  query(plan: QueryPlan, cancel?: Int32Array): QueryOutcome;
  changes(plan: ReadPlan, afterSeq: bigint, limit: number): { records: RequestLog[]; lastSeq: bigint; caughtUp: boolean; };
  currentSeq(): bigint;
  /**
   * Stored records of these ids (those that exist), in the order given, once each, with all their lines.
   */
  getRequests(appId: string, requestIds: readonly Uint8Array[]): RequestLog[];
}

import type Database from "better-sqlite3";
import type { RequestLog } from "../../../gen/reqlog/v1/log_service_pb.js";
import type { ReadPlan } from "../../query/read-plan.js";
import type { LineLoader, Row } from "./line-loader.js";
import { definedParams, type PlanSql } from "./plan-sql.js";
import { currentSeqSql, recordColumnsSql, recordJoin } from "./sql.js";

/** Records changed after a sequence number (Tail), by the (app_key, seq) index. */
export function createTailChanges(db: Database.Database, sql: PlanSql, lines: LineLoader) {
  const currentSeq = db.prepare(currentSeqSql).pluck().safeIntegers(true);

  return {
    currentSeq: () => currentSeq.get() as bigint,

    /** Matching records of `app` changed after `afterSeq`, oldest change first, at most `limit` examined. */
    changes(app: number | undefined, plan: ReadPlan, afterSeq: bigint, limit: number) {
      const upTo = currentSeq.get() as bigint;
      const none = { records: [] as RequestLog[], lastSeq: upTo, caughtUp: true };
      if (app === undefined) return none;
      const versions = sql.versionKeys(app, plan);
      if (versions && versions.length === 0) return none;
      const where = ["r.app_key = @app", "r.seq > @after", ...sql.filters(plan, versions)];
      if (plan.startTime !== undefined) where.push("r.sort_time >= @start");
      if (plan.endTime !== undefined) where.push("r.sort_time < @end");
      const rows = sql
        .statement(
          `SELECT ${recordColumnsSql} FROM ${recordJoin}
           WHERE ${where.join(" AND ")} ORDER BY r.seq LIMIT @limit`,
        )
        .all(
          definedParams({ app, after: afterSeq, limit, start: plan.startTime, end: plan.endTime, ...sql.filterParams(plan) }),
        ) as Row[];
      // A full batch may have more behind it; otherwise everything up to now was examined.
      const full = rows.length === limit;
      return {
        records: rows.map((row) => lines.toLog(row, plan)),
        lastSeq: full ? (rows[rows.length - 1]!.seq as bigint) : upTo,
        caughtUp: !full,
      };
    },
  };
}

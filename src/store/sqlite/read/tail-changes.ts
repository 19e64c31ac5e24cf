import type Database from "better-sqlite3";
import type { RequestLog } from "../../../../gen/reqlog/v1/log_service_pb.js";
import type { ReadPlan } from "../../../query/read-plan.js";
import { createPageBytes, pageBytesOf } from "../../../query/page-bytes.js";
import type { LineLoader, Row } from "./line-loader.js";
import { definedParams, type PlanSql } from "./plan-sql.js";
import { currentSeqSql, recordColumnsSql, recordJoinFrom } from "../rows/sql.js";

/**
 * Records changed after a sequence number (Tail). The changes are the rows
 * inserted after it (their id is their change's number) and the `updates`
 * after it, merged in order; a row is delivered at its last change only.
 */
export function createTailChanges(db: Database.Database, sql: PlanSql, lines: LineLoader) {
  const stmt = {
    currentSeq: db.prepare(currentSeqSql).pluck().safeIntegers(true),
    inserted: db.prepare("SELECT id, id FROM requests WHERE id > ? AND app_key = ? ORDER BY id LIMIT ?").raw().safeIntegers(true),
    updated: db
      .prepare(
        `SELECT u.seq, u.request_key FROM updates u JOIN requests r ON r.id = u.request_key
         WHERE u.seq > ? AND r.app_key = ? ORDER BY u.seq LIMIT ?`,
      )
      .raw()
      .safeIntegers(true),
  };

  return {
    currentSeq: () => stmt.currentSeq.get() as bigint,

    /** Matching records of `app` changed after `afterSeq`, oldest change first, at most `limit` changes examined. */
    changes(app: number | undefined, plan: ReadPlan, afterSeq: bigint, limit: number) {
      const upTo = stmt.currentSeq.get() as bigint;
      const none = { records: [] as RequestLog[], lastSeq: upTo, caughtUp: true };
      if (app === undefined) return none;
      const versions = sql.versionKeys(app, plan);
      if (versions && versions.length === 0) return none;
      // The app's next `limit` changes: the first `limit` of both kinds, merged.
      const changes = [
        ...(stmt.inserted.all(afterSeq, app, limit) as [seq: bigint, key: bigint][]),
        ...(stmt.updated.all(afterSeq, app, limit) as [seq: bigint, key: bigint][]),
      ]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .slice(0, limit);
      // A full batch may have more behind it; otherwise everything up to now was examined.
      const full = changes.length === limit;
      const lastSeq = full ? changes.at(-1)![0] : upTo;
      const where = ["r.app_key = @app", "coalesce(r.seq, r.id) > @after", "coalesce(r.seq, r.id) <= @last", ...sql.filters(plan, versions)];
      if (plan.startTime !== undefined) where.push("r.sort_time >= @start");
      if (plan.endTime !== undefined) where.push("r.sort_time < @end");
      // The rows whose last change is among them: inserted ones, and updated ones by their key.
      const rows = sql
        .statement(
          `SELECT ${recordColumnsSql} FROM ${recordJoinFrom("requests r NOT INDEXED")}
           WHERE r.id IN (SELECT value FROM json_each(@ids)) AND ${where.join(" AND ")}
           ORDER BY coalesce(r.seq, r.id)`,
        )
        .all(
          definedParams({
            app,
            after: afterSeq,
            last: lastSeq,
            ids: JSON.stringify(changes.map(([, key]) => Number(key))),
            start: plan.startTime,
            end: plan.endTime,
            ...sql.filterParams(plan),
          }),
        ) as Row[];
      // At most a page's bytes a message: the rest is delivered next, from the last change taken.
      const bytes = createPageBytes(plan);
      const kept = rows.findIndex((row) => !bytes.take(pageBytesOf(row.record_bytes as bigint, row.line_bytes as bigint, plan)));
      if (kept >= 0) {
        const taken = rows.slice(0, kept);
        const last = taken.at(-1)!;
        return { records: taken.map((row) => lines.toLog(row, plan)), lastSeq: (last.seq ?? last.id) as bigint, caughtUp: false };
      }
      return { records: rows.map((row) => lines.toLog(row, plan)), lastSeq, caughtUp: !full };
    },
  };
}

import type { RequestLog } from "../../../../gen/reqlog/v1/log_service_pb.js";
import { createPageBytes, pageBytesOf } from "../../../query/page-bytes.js";
import type { ReadPlan } from "../../../query/read-plan.js";
import { and, planFilters, timeRange } from "./plan-sql.js";
import type { RecordReader } from "./record-reader.js";
import { type RequestRow, selectRequests } from "../rows/request-row.js";
import type { SqlClient } from "../sql-client.js";
import { sqlInt, sqlString } from "../rows/sql-literal.js";
import { advanceTo, covers, heldSql, type Snapshot } from "./snapshot.js";

/**
 * Records changed after a position (Tail): the latest version of each
 * request of the app that the marks now hold and the position did not, in
 * the order of their numbers (a version of an insert still going on is
 * taken once its server has published it).
 */
/** Up to `limit` records changed after `after` up to `upTo`, oldest first, with where the next call goes on. */
export type TailChanges = (
  plan: ReadPlan,
  after: Snapshot,
  upTo: Snapshot,
  limit: number,
  signal: AbortSignal,
) => Promise<{ records: RequestLog[]; position: Snapshot; caughtUp: boolean }>;

export function createTailChanges(sql: SqlClient, records: RecordReader): TailChanges {
  return async function changes(plan: ReadPlan, after: Snapshot, upTo: Snapshot, limit: number, signal: AbortSignal) {
    if (covers(after, upTo)) return { records: [] as RequestLog[], position: after, caughtUp: true };
    const where = [
      `app = ${sqlString(plan.appId)}`,
      `NOT ${heldSql("seq", after)}`,
      heldSql("seq", upTo),
      "deleted = 0",
      ...timeRange(plan),
      ...planFilters(plan),
    ];
    const rows = await sql.rows<RequestRow>(
      selectRequests(`FINAL WHERE ${and(where)} ORDER BY seq LIMIT ${sqlInt(limit)}`),
      signal,
    );
    // At most a page's bytes a message: the rest is delivered next, from the last version taken.
    const bytes = createPageBytes(plan);
    const fitting = rows.findIndex((row) => !bytes.take(pageBytesOf(row.record_bytes, row.line_bytes, plan)));
    if (fitting >= 0) {
      const taken = rows.slice(0, fitting);
      return {
        records: await records.toLogs(taken, plan, signal),
        position: advanceTo(after, upTo, BigInt(taken.at(-1)!.seq)),
        caughtUp: false,
      };
    }
    // A full batch may have more behind it: every version up to its last number is returned.
    const full = rows.length === limit;
    return {
      records: await records.toLogs(rows, plan, signal),
      position: full ? advanceTo(after, upTo, BigInt(rows.at(-1)!.seq)) : advanceTo(after, upTo),
      caughtUp: !full,
    };
  };
}

import type { RequestLog } from "../../../gen/reqlog/v1/log_service_pb.js";
import { createPageBytes, pageBytesOf } from "../../query/page-bytes.js";
import type { ReadPlan } from "../../query/read-plan.js";
import type { ChangeSequence } from "./change-sequence.js";
import { and, planFilters, timeRange } from "./plan-sql.js";
import type { RecordReader } from "./record-reader.js";
import type { RequestRow } from "./request-row.js";
import type { SqlClient } from "./sql-client.js";
import { sqlInt, sqlString } from "./sql-literal.js";

/**
 * Records changed after a change sequence number (Tail): the latest version
 * of each request of the app with a higher seq, up to the committed one (a
 * group being inserted may be partly visible; it is taken once committed).
 */
export function createTailChanges(sql: SqlClient, records: RecordReader, seq: ChangeSequence) {
  return async function changes(plan: ReadPlan, afterSeq: bigint, limit: number, signal: AbortSignal) {
    const upTo = seq.committed;
    if (afterSeq >= upTo) return { records: [] as RequestLog[], lastSeq: afterSeq, caughtUp: true };
    const where = [
      `app = ${sqlString(plan.appId)}`,
      `seq > ${sqlInt(afterSeq)}`,
      `seq <= ${sqlInt(upTo)}`,
      "deleted = 0",
      ...timeRange(plan),
      ...planFilters(plan),
    ];
    const rows = await sql.rows<RequestRow>(
      `SELECT * FROM requests FINAL WHERE ${and(where)} ORDER BY seq LIMIT ${sqlInt(limit)}`,
      signal,
    );
    // At most a page's bytes a message: the rest is delivered next, from the last change taken.
    const bytes = createPageBytes(plan);
    const fitting = rows.findIndex((row) => !bytes.take(pageBytesOf(row.record_bytes, row.line_bytes, plan)));
    if (fitting >= 0) {
      const taken = rows.slice(0, fitting);
      return { records: await records.toLogs(taken, plan, signal), lastSeq: BigInt(taken.at(-1)!.seq), caughtUp: false };
    }
    // A full batch may have more behind it; otherwise everything up to now was examined.
    const full = rows.length === limit;
    return {
      records: await records.toLogs(rows, plan, signal),
      lastSeq: full ? BigInt(rows.at(-1)!.seq) : upTo,
      caughtUp: !full,
    };
  };
}

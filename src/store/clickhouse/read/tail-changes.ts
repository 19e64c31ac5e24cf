import type { RequestLog } from "../../../../gen/reqlog/v1/log_service_pb.js";
import type { ReadPlan } from "../../../query/read-plan.js";
import type { ChangeSequence } from "../change-sequence.js";
import { and, planFilters, timeRange } from "./plan-sql.js";
import type { RecordReader } from "./record-reader.js";
import type { RequestRow } from "../rows/request-row.js";
import type { SqlClient } from "../sql-client.js";
import { sqlInt, sqlString } from "../rows/sql-literal.js";

/**
 * Records changed after a change sequence number (Tail): the latest version
 * of each request of the app with a higher seq, up to the committed one (a
 * group being inserted may be partly visible; it is taken once committed).
 */
export function createTailChanges(sql: SqlClient, records: RecordReader, seq: ChangeSequence): TailChanges {
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
    // A full batch may have more behind it; otherwise everything up to now was examined.
    const full = rows.length === limit;
    return {
      records: await records.toLogs(rows, plan, signal),
      lastSeq: full ? BigInt(rows.at(-1)!.seq) : upTo,
      caughtUp: !full,
    };
  };
}

/** Up to `limit` records changed after `afterSeq`, oldest first, with where the next call goes on. */
export type TailChanges = (
  plan: ReadPlan,
  afterSeq: bigint,
  limit: number,
  signal: AbortSignal,
) => Promise<{ records: RequestLog[]; lastSeq: bigint; caughtUp: boolean }>;

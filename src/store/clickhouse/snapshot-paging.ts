import type { ReadPlan } from "../../query/read-plan.js";
import { ReqlogError } from "../../reqlog-error.js";
import type { ReadResult } from "../store.js";
import type { ChangeSequence } from "./change-sequence.js";
import { decodeCursor, encodeCursor, type ClickHouseCursor } from "./cursor.js";
import { and, planFilters, timeRange } from "./plan-sql.js";
import type { RecordReader } from "./record-reader.js";
import type { RequestRow } from "./request-row.js";
import type { SqlClient } from "./sql-client.js";
import { bytesToText, sqlInt, sqlList, sqlString } from "./sql-literal.js";

/** A record in a page's scan: where it stands in the snapshot's order; changed records come whole. */
interface Candidate {
  sortTime: bigint;
  rkey: bigint;
  requestId: string;
  changed?: RequestRow;
}

const newer = (a: Candidate, b: Candidate) => a.sortTime > b.sortTime || (a.sortTime === b.sortTime && a.rkey > b.rkey);

/** Where paging history stands: offsets from before `floor` (a change sequence number) have expired. */
export interface PagingHistory {
  floor: bigint;
}

/**
 * Read's pages on ClickHouse: newest first by sort time, keyset-paged from a
 * snapshot, as the SQLite backend pages (its snapshot-paging.ts). A first
 * page takes the committed change sequence number as its snapshot; its
 * cursors carry it, so later pages walk the order as it stood then: records
 * unchanged since (latest version's seq ≤ snapshot) come from a scan of
 * `requests FINAL` in (sort time, rkey) order, records changed since are put
 * where they stood (their first move after the snapshot), and records created
 * since are left out.
 *
 * The scan streams only each row's key and whether it matches the plan's
 * filters (computed by ClickHouse); it stops at the plan's row or time budget
 * or once the page is full, and the matching records are then read whole.
 */
export function createSnapshotPaging(sql: SqlClient, records: RecordReader, seq: ChangeSequence, history: PagingHistory) {
  /** Records that existed at the snapshot and changed since, with the sort time each had then, newest first. */
  async function changedSince(plan: ReadPlan, snapshot: bigint, after: ClickHouseCursor | undefined, signal: AbortSignal) {
    if (snapshot >= seq.committed) return [];
    const app = sqlString(plan.appId);
    const rows = await sql.rows<RequestRow>(
      `SELECT * FROM requests FINAL
       WHERE app = ${app} AND seq > ${sqlInt(snapshot)} AND rkey <= ${sqlInt(snapshot)} AND deleted = 0 AND ${and(planFilters(plan))}`,
      signal,
    );
    if (rows.length === 0) return [];
    const moves = await sql.rows<{ rkey: string; old: string }>(
      `SELECT rkey, argMin(old_sort_time, seq) AS old FROM moves
       WHERE app = ${app} AND seq > ${sqlInt(snapshot)} AND rkey IN ${sqlList(rows.map((r) => r.rkey))}
       GROUP BY rkey`,
      signal,
    );
    const stoodAt = new Map(moves.map((m) => [m.rkey, BigInt(m.old)]));
    return rows
      .map((row): Candidate => ({
        sortTime: stoodAt.get(row.rkey) ?? BigInt(row.sort_time),
        rkey: BigInt(row.rkey),
        requestId: row.request_id,
        changed: row,
      }))
      .filter(
        (c) =>
          (plan.startTime === undefined || c.sortTime >= plan.startTime) &&
          (plan.endTime === undefined || c.sortTime < plan.endTime) &&
          (!after || c.sortTime < after.sortTime || (c.sortTime === after.sortTime && c.rkey < after.rkey)),
      )
      .sort((a, b) => (newer(a, b) ? -1 : 1));
  }

  /** Records unchanged since the snapshot, newest first, from after the cursor: key and whether it matches. */
  function unchangedScan(plan: ReadPlan, snapshot: bigint, after: ClickHouseCursor | undefined, signal: AbortSignal) {
    const where = [`app = ${sqlString(plan.appId)}`, `seq <= ${sqlInt(snapshot)}`, "deleted = 0", ...timeRange(plan)];
    if (after) {
      where.push(`sort_time <= ${sqlInt(after.sortTime)}`);
      where.push(`(sort_time < ${sqlInt(after.sortTime)} OR rkey < ${sqlInt(after.rkey)})`);
    }
    // The row past the budget is examined too (as on SQLite): rows + 1.
    return sql.stream(
      `SELECT sort_time, rkey, request_id, ${and(planFilters(plan))} AS matches FROM requests FINAL
       WHERE ${where.join(" AND ")} ORDER BY sort_time DESC, rkey DESC LIMIT ${sqlInt(plan.budget.rows + 1)}`,
      signal,
    );
  }

  async function page(plan: ReadPlan, snapshot: bigint, after: ClickHouseCursor | undefined, signal: AbortSignal): Promise<ReadResult> {
    const deadline = performance.now() + plan.budget.ms;
    const changed = await changedSince(plan, snapshot, after, signal);
    const matched: Candidate[] = [];
    let last: Candidate | undefined;
    let next: Candidate | undefined;
    /** Takes a match; true when the page was full already (then it ends before this one). */
    const take = (c: Candidate): boolean => {
      if (matched.length === plan.count) {
        next = matched.at(-1);
        return true;
      }
      matched.push(c);
      return false;
    };
    let c = 0;
    let examined = 0;
    scan: for await (const [sortTime, rkey, requestId, matches] of unchangedScan(plan, snapshot, after, signal)) {
      const row: Candidate = { sortTime: BigInt(sortTime!), rkey: BigInt(rkey!), requestId: requestId! };
      for (; c < changed.length && newer(changed[c]!, row); c++) {
        last = changed[c];
        if (take(changed[c]!)) break scan;
      }
      if (signal.aborted) throw ReqlogError.cancelled();
      last = row;
      examined++;
      if (matches === "1" && take(row)) break;
      // Budget spent (rows or time): the page ends after this row, matching or not.
      if (examined > plan.budget.rows || performance.now() > deadline) {
        next = row;
        break;
      }
    }
    if (next === undefined) {
      for (; c < changed.length; c++) {
        last = changed[c];
        if (take(changed[c]!)) break;
      }
    }

    // The unchanged matches, read whole (one may have changed or gone since the scan: it is left out when gone).
    const unchanged = matched.filter((m) => !m.changed).map((m) => m.requestId);
    const whole = new Map((await records.byIds(plan.appId, unchanged, [], signal)).map((r) => [r.request_id, r]));
    const kept = matched.filter((m) => m.changed ?? whole.has(m.requestId));
    const logs = await records.toLogs(kept.map((m) => m.changed ?? whole.get(m.requestId)!), plan, signal);
    const cursorOf = (m: Candidate) => encodeCursor({ snapshot, sortTime: m.sortTime, rkey: m.rkey });
    return {
      records: logs.map((log, i) => ({ log, cursor: cursorOf(kept[i]!) })),
      next: next && cursorOf(next),
      lastSortTime: last?.sortTime,
    };
  }

  return {
    /** One page of a Read (request ids, or newest first from the plan's cursor). */
    async read(plan: ReadPlan, signal: AbortSignal): Promise<ReadResult> {
      const after = plan.after && decodeCursor(plan.after);
      const snapshot = after?.snapshot ?? seq.committed;
      if (after && after.snapshot < history.floor) {
        throw ReqlogError.invalid("offset expired: it is over 24 hours old; start the read again without it");
      }
      if (plan.requestIds) {
        const ids = plan.requestIds.map(bytesToText);
        const rows = await records.byIds(plan.appId, ids, planFilters(plan), signal);
        const logs = await records.toLogs(rows, plan, signal);
        return {
          records: logs.map((log, i) => ({
            log,
            cursor: encodeCursor({ snapshot, sortTime: BigInt(rows[i]!.sort_time), rkey: BigInt(rows[i]!.rkey) }),
          })),
        };
      }
      return page(plan, snapshot, after, signal);
    },
  };
}

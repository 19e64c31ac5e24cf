import type Database from "better-sqlite3";
import type { ReadPlan } from "../../query/read-plan.js";
import { ReqlogError } from "../../reqlog-error.js";
import type { ReadResult } from "../store.js";
import { decodeCursor, encodeCursor, type SqliteCursor } from "./cursor.js";
import type { LineLoader, Row } from "./line-loader.js";
import { definedParams, type PlanSql } from "./plan-sql.js";
import type { ScanBudget } from "./scan-budget.js";
import { currentSeqSql, recordColumnsSql, recordJoin } from "./sql.js";

const newerFirst = (a: Row, b: Row): number => {
  const ka = a.key_time as bigint;
  const kb = b.key_time as bigint;
  if (ka !== kb) return ka > kb ? -1 : 1;
  return (a.id as bigint) > (b.id as bigint) ? -1 : 1;
};

/** The highest sort time a page may return (inclusive), or undefined. */
function upperBound(plan: ReadPlan, after: SqliteCursor | undefined): bigint | undefined {
  const end = plan.endTime !== undefined ? plan.endTime - 1n : undefined;
  const bound = after?.sortTime;
  if (end === undefined) return bound;
  return bound === undefined || end < bound ? end : bound;
}

/**
 * Read's pages: newest first by sort time, keyset-paged from a snapshot. A
 * first page takes the current change sequence number as its snapshot; its
 * cursors carry it, so later pages walk the order as it stood then: records
 * unchanged since come from the time index, records changed since are put
 * where they stood (their first move after the snapshot), and records
 * created since are left out.
 */
export function createSnapshotPaging(db: Database.Database, sql: PlanSql, lines: LineLoader, budget: ScanBudget) {
  const stmt = {
    currentSeq: db.prepare(currentSeqSql).pluck().safeIntegers(true),
    movesFloor: db.prepare("SELECT value FROM meta WHERE key = 'moves_floor'").pluck().safeIntegers(true),
  };

  /**
   * Records unchanged since the snapshot, newest first by sort time: their
   * sort time now is where they stood then. The keyset bound and time range
   * go to SQL, so the scan starts right after the cursor on the index.
   */
  function unchangedScan(plan: ReadPlan, versions: number[] | undefined, after: SqliteCursor | undefined) {
    const where = ["r.app_key = @app", "r.seq <= @snapshot"];
    if (plan.startTime !== undefined) where.push("r.sort_time >= @start");
    // One inclusive upper bound (the lower of end_time − 1 and the cursor):
    // given two, SQLite seeks on one and filters by the other, and a deep
    // page would start its scan at the top of the range.
    if (plan.endTime !== undefined || after) where.push("r.sort_time <= @upper");
    // The exact keyset bound within the cursor's own sort time.
    if (after) where.push("(r.sort_time < @afterTime OR r.id < @afterId)");
    // reqlog_spent() sees every row the index range yields, before the other
    // filters: once the budget is spent it lets that row through, so the
    // scan stops there even when no row matches.
    where.push(`(reqlog_spent() OR (${sql.filters(plan, versions).join(" AND ")}))`);
    // INDEXED BY: walking the (app, sort time, id) index backwards is what
    // makes a page cost the same at any depth and lets the budget stop the
    // scan; left alone, the planner may pick the seq or version index and
    // sort every row in the range first.
    return sql.statement(
      `SELECT ${recordColumnsSql}, r.sort_time AS key_time
       FROM requests r INDEXED BY requests_by_time
       JOIN versions v ON v.id = r.version_key JOIN apps a ON a.id = r.app_key
       WHERE ${where.join(" AND ")} ORDER BY r.sort_time DESC, r.id DESC`,
    );
  }

  /**
   * Records that existed at the snapshot and changed since, each with the sort
   * time it had then (its first move after the snapshot, else its sort time).
   */
  function changedScan(plan: ReadPlan, versions: number[] | undefined) {
    const where = ["r.app_key = @app", "r.seq > @snapshot", "r.created_seq <= @snapshot", ...sql.filters(plan, versions)];
    return sql.statement(
      `SELECT ${recordColumnsSql}, coalesce(
         (SELECT m.old_sort_time FROM moves m WHERE m.request_key = r.id AND m.seq > @snapshot
          ORDER BY m.seq LIMIT 1), r.sort_time) AS key_time
       FROM ${recordJoin}
       WHERE ${where.join(" AND ")}`,
    );
  }

  /**
   * Whether one row passes the plan's filters: the same SQL as the scans,
   * for rows that reach JS unfiltered (request-id mode, the row a spent
   * budget let through). Needs the plan's patterns armed.
   */
  function passesFilters(id: bigint, plan: ReadPlan, versions: number[] | undefined): boolean {
    const statement = sql.statement(`SELECT 1 FROM requests r WHERE r.id = @id AND ${sql.filters(plan, versions).join(" AND ")}`);
    return statement.get({ id, ...sql.filterParams(plan) }) !== undefined;
  }

  /** The keyset scan of one page: unchanged and changed records merged in snapshot order. */
  function* scan(
    app: number,
    plan: ReadPlan,
    versions: number[] | undefined,
    snapshot: bigint,
    after: SqliteCursor | undefined,
  ): Generator<Row> {
    const filterParams = sql.filterParams(plan);
    let changed: Row[] = [];
    if (snapshot < (stmt.currentSeq.get() as bigint)) {
      changed = (changedScan(plan, versions).all({ app, snapshot, ...filterParams }) as Row[])
        .filter((row) => {
          const key = row.key_time as bigint;
          return (
            (plan.startTime === undefined || key >= plan.startTime) &&
            (plan.endTime === undefined || key < plan.endTime) &&
            (!after || key < after.sortTime || (key === after.sortTime && (row.id as bigint) < after.id))
          );
        })
        .sort(newerFirst)
        .map((row) => ({ ...row, changed: true }));
    }
    const params = definedParams({
      app,
      snapshot,
      start: plan.startTime,
      upper: upperBound(plan, after),
      afterTime: after?.sortTime,
      afterId: after?.id,
      ...filterParams,
    });
    let next = 0;
    for (const row of unchangedScan(plan, versions, after).iterate(params) as IterableIterator<Row>) {
      while (next < changed.length && newerFirst(changed[next]!, row) < 0) yield changed[next++]!;
      yield row;
    }
    while (next < changed.length) yield changed[next++]!;
  }

  function page(
    app: number,
    plan: ReadPlan,
    versions: number[] | undefined,
    snapshot: bigint,
    after: SqliteCursor | undefined,
  ): ReadResult {
    const cursorOf = (row: Row) => encodeCursor({ snapshot, sortTime: row.key_time as bigint, id: row.id as bigint });
    const matched: Row[] = [];
    let last: Row | undefined;
    let next: Row | undefined;
    let unfiltered: Row | undefined;
    for (const row of scan(app, plan, versions, snapshot, after)) {
      last = row;
      if (budget.spent && row.changed === undefined) {
        // The budget let this row through unfiltered; it is checked once the
        // scan is closed (a statement cannot run beside an open iterator).
        unfiltered = row;
        break;
      }
      if (matched.length === plan.count) {
        // One more match exists: the page is full and more remain.
        next = matched[matched.length - 1]!;
        break;
      }
      matched.push(row);
    }
    if (unfiltered) {
      const matches = passesFilters(unfiltered.id as bigint, plan, versions);
      if (matches && matched.length === plan.count) {
        next = matched[matched.length - 1]!;
      } else {
        if (matches) matched.push(unfiltered);
        // Continue after this row; the rows before it that were not
        // returned did not match.
        next = unfiltered;
      }
    }
    return {
      records: matched.map((row) => ({ log: lines.toLog(row, plan), cursor: cursorOf(row) })),
      next: next && cursorOf(next),
      lastSortTime: last ? (last.key_time as bigint) : undefined,
    };
  }

  return {
    /** One page of a Read (request ids, or newest first from the plan's cursor). */
    read(app: number | undefined, plan: ReadPlan): ReadResult {
      const after = plan.after && decodeCursor(plan.after);
      const snapshot = after?.snapshot ?? (stmt.currentSeq.get() as bigint);
      if (after && after.snapshot < (stmt.movesFloor.get() as bigint)) {
        throw ReqlogError.invalid("offset expired: it is over 24 hours old; start the read again without it");
      }
      if (app === undefined) return { records: [] };
      const versions = sql.versionKeys(app, plan);
      if (plan.requestIds) {
        const rows = lines.recordRows(app, plan.requestIds).filter((row) => passesFilters(row.id as bigint, plan, versions));
        return {
          records: rows.map((row) => ({
            log: lines.toLog(row, plan),
            cursor: encodeCursor({ snapshot, sortTime: row.sort_time as bigint, id: row.id as bigint }),
          })),
        };
      }
      if (versions && versions.length === 0) return { records: [] };
      return page(app, plan, versions, snapshot, after);
    },
  };
}

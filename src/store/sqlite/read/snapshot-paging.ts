import type Database from "better-sqlite3";
import type { ReadPlan } from "../../../query/read-plan.js";
import { ReqlogError } from "../../../reqlog-error.js";
import type { ReadResult } from "../../store.js";
import { checkRequestIdBytes, createPageBytes, pageBytesOf } from "../../../query/page-bytes.js";
import { decodeCursor, encodeCursor, type SqliteCursor } from "./cursor.js";
import type { LineLoader, Row } from "./line-loader.js";
import { definedParams, type PlanSql } from "./plan-sql.js";
import type { ScanBudget } from "./scan-budget.js";
import { currentSeqSql, recordColumnsSql, recordJoinFrom, unindexedRowsSql } from "../rows/sql.js";

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
 * Most candidates the search index may give a Read before it scans in
 * time order instead: a Read looks at every candidate (it must, to page
 * exactly), and when they are this many, matches are dense enough for the
 * scan to fill a page soon.
 */
const maxCandidates = 20_000;

/**
 * A range of at most this many rows is scanned even when the search index
 * could narrow the pattern: scanning it costs about what asking the index
 * does (docs/search-index.md).
 */
const scanUpTo = 2_000;

/**
 * When a regex Read asks the search index: `auto` when the index can narrow
 * the pattern and the range is large enough to be worth it; `always`
 * whenever it can narrow it; `never` (scan). Tests compare the two.
 */
export type SearchIndexUse = "auto" | "always" | "never";

/** Where a page's records come from: the time index walked newest first, or the search index's candidates. */
type Source = { kind: "scan" } | { kind: "candidates"; ids: string };

/** One page's scan: the app, the plan and its versions, the snapshot it reads at, where it starts, what it walks. */
interface PageScan {
  app: number;
  plan: ReadPlan;
  versions: number[] | undefined;
  snapshot: bigint;
  after: SqliteCursor | undefined;
  source: Source;
}

/**
 * Read's pages: newest first by sort time, keyset-paged from a snapshot. A
 * first page takes the current change sequence number as its snapshot; its
 * cursors carry it, so later pages walk the order as it stood then: records
 * unchanged since come from the time index (or, for a regex the search
 * index can narrow, from its candidates: the same records, in the same
 * order), records changed since are put where they stood (their first
 * update after the snapshot), and records created since are left out.
 */
export function createSnapshotPaging(
  db: Database.Database,
  sql: PlanSql,
  lines: LineLoader,
  budget: ScanBudget,
  searchIndex: SearchIndexUse = "auto",
) {
  const stmt = {
    currentSeq: db.prepare(currentSeqSql).pluck().safeIntegers(true),
    movesFloor: db.prepare("SELECT value FROM meta WHERE key = 'moves_floor'").pluck().safeIntegers(true),
    updatesAfter: db.prepare("SELECT request_key, old_sort_time FROM updates WHERE seq > ? ORDER BY seq").raw().safeIntegers(true),
    rowsInRange: db
      .prepare(
        `SELECT count(*) FROM (SELECT 1 FROM requests INDEXED BY requests_by_time
         WHERE app_key = @app AND sort_time >= @start AND sort_time <= @upper LIMIT ${scanUpTo + 1})`,
      )
      .pluck(),
    // Rows the search index does not hold yet (search-doc.ts): candidates for every pattern.
    unindexed: db.prepare(unindexedRowsSql).pluck(),
  };
  const candidateStatements = new Map<number, Database.Statement>();
  const candidates = (limit: number) => {
    let statement = candidateStatements.get(limit);
    if (!statement) {
      statement = db.prepare(`SELECT rowid FROM request_search WHERE request_search MATCH ? LIMIT ${limit}`).pluck();
      candidateStatements.set(limit, statement);
    }
    return statement;
  };

  /**
   * Records unchanged since the snapshot, newest first by sort time: their
   * sort time now is where they stood then. The keyset bound and time range
   * go to SQL, so the scan starts right after the cursor on the index.
   */
  function unchangedScan(plan: ReadPlan, versions: number[] | undefined, after: SqliteCursor | undefined, source: Source) {
    const where = ["r.app_key = @app", "coalesce(r.seq, r.id) <= @snapshot"];
    if (plan.startTime !== undefined) where.push("r.sort_time >= @start");
    // One inclusive upper bound (the lower of end_time − 1 and the cursor):
    // given two, SQLite seeks on one and filters by the other, and a deep
    // page would start its scan at the top of the range.
    if (plan.endTime !== undefined || after) where.push("r.sort_time <= @upper");
    // The exact keyset bound within the cursor's own sort time.
    if (after) where.push("(r.sort_time < @afterTime OR r.id < @afterId)");
    if (source.kind === "candidates") {
      // Every candidate is looked at (they are few): no budget, and the page
      // is the first matches in the same order a scan would find them.
      where.push("r.id IN (SELECT value FROM json_each(@ids))", ...sql.filters(plan, versions, false));
      // NOT INDEXED: each candidate by its row id, then sorted; left alone, the
      // planner walks the app's whole time index for the ORDER BY.
      return sql.statement(
        `SELECT ${recordColumnsSql}, r.sort_time AS key_time FROM ${recordJoinFrom("requests r NOT INDEXED")}
         WHERE ${where.join(" AND ")} ORDER BY r.sort_time DESC, r.id DESC LIMIT @limit`,
      );
    }
    // reqlog_spent() sees every row the index range yields, before the other
    // filters: once the budget is spent it lets that row through, so the
    // scan stops there even when no row matches.
    where.push(`(reqlog_spent() OR (${sql.filters(plan, versions).join(" AND ")}))`);
    // INDEXED BY: walking the (app, sort time, id) index backwards is what
    // makes a page cost the same at any depth and lets the budget stop the
    // scan; left alone, the planner may pick another index and sort every
    // row in the range first.
    return sql.statement(
      `SELECT ${recordColumnsSql}, r.sort_time AS key_time FROM ${recordJoinFrom("requests r INDEXED BY requests_by_time")}
       WHERE ${where.join(" AND ")} ORDER BY r.sort_time DESC, r.id DESC`,
    );
  }

  /**
   * Records that existed at the snapshot and changed since, each with the
   * sort time it had then (where its first update after the snapshot found
   * it), that pass the plan's filters now.
   */
  function changedRows(app: number, plan: ReadPlan, versions: number[] | undefined, snapshot: bigint): Row[] {
    const stoodAt = new Map<bigint, bigint>();
    for (const [key, oldSortTime] of stmt.updatesAfter.all(snapshot) as [bigint, bigint][]) {
      if (key <= snapshot && !stoodAt.has(key)) stoodAt.set(key, oldSortTime);
    }
    if (stoodAt.size === 0) return [];
    const where = ["r.app_key = @app", "r.id IN (SELECT value FROM json_each(@ids))", ...sql.filters(plan, versions)];
    const rows = sql
      .statement(`SELECT ${recordColumnsSql} FROM ${recordJoinFrom("requests r NOT INDEXED")} WHERE ${where.join(" AND ")}`)
      .all({ app, ids: JSON.stringify([...stoodAt.keys()].map(Number)), ...sql.filterParams(plan) }) as Row[];
    return rows.map((row) => ({ ...row, key_time: stoodAt.get(row.id as bigint)!, changed: true }));
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
  function* scan({ app, plan, versions, snapshot, after, source }: PageScan): Generator<Row> {
    let changed: Row[] = [];
    if (snapshot < (stmt.currentSeq.get() as bigint)) {
      changed = changedRows(app, plan, versions, snapshot)
        .filter((row) => {
          const key = row.key_time as bigint;
          return (
            (plan.startTime === undefined || key >= plan.startTime) &&
            (plan.endTime === undefined || key < plan.endTime) &&
            (!after || key < after.sortTime || (key === after.sortTime && (row.id as bigint) < after.id))
          );
        })
        .sort(newerFirst);
    }
    const params = definedParams({
      app,
      snapshot,
      start: plan.startTime,
      upper: upperBound(plan, after),
      afterTime: after?.sortTime,
      afterId: after?.id,
      ids: source.kind === "candidates" ? source.ids : undefined,
      limit: source.kind === "candidates" ? plan.count + 1 : undefined,
      ...sql.filterParams(plan),
    });
    let next = 0;
    for (const row of unchangedScan(plan, versions, after, source).iterate(params) as IterableIterator<Row>) {
      while (next < changed.length && newerFirst(changed[next]!, row) < 0) yield changed[next++]!;
      yield row;
    }
    while (next < changed.length) yield changed[next++]!;
  }

  function page(scanned: PageScan): ReadResult {
    const { plan, versions, snapshot } = scanned;
    const cursorOf = (row: Row) => encodeCursor({ snapshot, sortTime: row.key_time as bigint, id: row.id as bigint });
    const matched: Row[] = [];
    const bytes = createPageBytes(plan);
    /** Takes a match, unless the page is full (by count or bytes) already: then more remain after the last taken. */
    const fits = (row: Row) => matched.length < plan.count && bytes.take(pageBytesOf(row.record_bytes as bigint, row.line_bytes as bigint, plan));
    let last: Row | undefined;
    let next: Row | undefined;
    let unfiltered: Row | undefined;
    for (const row of scan(scanned)) {
      last = row;
      if (budget.spent && row.changed === undefined) {
        // The budget let this row through unfiltered; it is checked once the
        // scan is closed (a statement cannot run beside an open iterator).
        unfiltered = row;
        break;
      }
      if (!fits(row)) {
        // One more match exists: the page is full and more remain.
        next = matched[matched.length - 1]!;
        break;
      }
      matched.push(row);
    }
    if (unfiltered) {
      const matches = passesFilters(unfiltered.id as bigint, plan, versions);
      if (matches && !fits(unfiltered)) {
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

  /**
   * The search index's candidates for the plan's regex, when it can narrow
   * it to few enough (undefined: scan in time order).
   */
  function candidatesOf(app: number, plan: ReadPlan, after: SqliteCursor | undefined): Source | "none" | undefined {
    if (plan.combinedRegex === undefined || searchIndex === "never") return undefined;
    const search = sql.search(plan.combinedRegex);
    if (search.none) return "none";
    if (!search.match) return undefined;
    const range = { app, start: plan.startTime ?? -(2n ** 63n), upper: upperBound(plan, after) ?? 2n ** 63n - 1n };
    if (searchIndex === "auto" && (stmt.rowsInRange.get(range) as number) <= scanUpTo) return undefined;
    const cap = Math.min(plan.budget.rows, maxCandidates);
    const ids = candidates(cap + 1).all(search.match) as number[];
    if (ids.length > cap) return undefined;
    for (const id of stmt.unindexed.all(app) as number[]) ids.push(id);
    if (ids.length > cap) return undefined;
    budget.charge(ids.length);
    return { kind: "candidates", ids: JSON.stringify(ids) };
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
        checkRequestIdBytes(rows.map((row) => pageBytesOf(row.record_bytes as bigint, row.line_bytes as bigint, plan)), plan);
        return {
          records: rows.map((row) => ({
            log: lines.toLog(row, plan),
            cursor: encodeCursor({ snapshot, sortTime: row.sort_time as bigint, id: row.id as bigint }),
          })),
        };
      }
      if (versions && versions.length === 0) return { records: [] };
      const source = candidatesOf(app, plan, after);
      if (source === "none") return { records: [] };
      return page({ app, plan, versions, snapshot, after, source: source ?? { kind: "scan" } });
    },
  };
}

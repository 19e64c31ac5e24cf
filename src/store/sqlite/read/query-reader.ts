import type Database from "better-sqlite3";
import { compileFilter, filterFields } from "../../../query/logsql/match-filter.js";
import { classRanges, conjuncts, intersect, type Intervals, type QueryPlan, statusIntervals } from "../../../query/logsql/plan-query.js";
import type { Filter } from "../../../query/logsql/query-ast.js";
import { queryField } from "../../../query/logsql/query-fields.js";
import { createPipeline, requestFieldsRead } from "../../../query/logsql/run-pipes.js";
import type { QueryResult } from "../../store.js";
import { createAppLookup } from "../rows/keys.js";
import type { PlanSql } from "./plan-sql.js";
import { createQueryRows, type RawRow } from "./query-row.js";
import type { ScanBudget } from "./scan-budget.js";
import type { SearchIndexUse } from "./snapshot-paging.js";
import { unindexedRowsSql } from "../rows/sql.js";
import { stringKind } from "../rows/strings.js";
import { errorStatusesOnly, errorStatusesSql } from "../migrations/009-status-index.js";

/** Columns that hold a key of `strings`, by query field. */
const dictionaryFields: Record<string, number> = {
  method: stringKind.method,
  http_version: stringKind.httpVersion,
  referrer: stringKind.referrer,
  user_agent: stringKind.userAgent,
  host: stringKind.host,
  url_map_entry: stringKind.urlMapEntry,
};
/** A dictionary with more entries than this is not read whole to narrow a filter (the filter still decides). */
const maxDictionary = 20_000;
/** Number columns a range filter is pushed down to as it is. */
const numberColumns = new Set(["status", "latency", "response_size", "mcycles"]);

const typeOf = (field: string) => queryField(field)!.type;
const hourUs = 3_600_000_000;
/** The status index is read instead of the time index when a status filter keeps at most this share of the range's rows. */
const statusIndexShare = 1 / 4;

/**
 * The statuses every match has (the intersection of the filter's top-level
 * status terms), or undefined without a term that bounds them. `status:503`
 * is a phrase: the status whose text holds the word 503 (503 and -503).
 */
function statusSet(terms: readonly Filter[]): Intervals | undefined {
  let set: Intervals | undefined;
  for (const t of terms) {
    const fields = filterFields(t);
    if (fields.size !== 1 || !fields.has("status")) continue;
    const word = t.kind === "phrase" && !t.prefix && !t.anyCase && /^\d{1,9}$/.test(t.phrase) ? Number(t.phrase) : undefined;
    const these: Intervals | undefined =
      word === undefined ? statusIntervals(t) : String(word) === (t as { phrase: string }).phrase ? [[-word, -word], [word, word]] : [];
    if (these) set = set ? intersect(set, these) : these;
  }
  return set && (set.length !== 1 || set[0]![0] !== -Infinity || set[0]![1] !== Infinity) ? set : undefined;
}

/** SQL every status of the set passes: the statuses themselves when they are a few, else their hull as a range. */
function statusSql(set: Intervals): string {
  if (set.length === 0) return "0";
  if (set.length <= 64 && set.every(([a, b]) => a === b)) return `r.status IN (${set.map(([a]) => a).join(", ")})`;
  const lo = Math.min(...set.map(([a]) => a));
  const hi = Math.max(...set.map(([, b]) => b));
  return [...(lo === -Infinity ? [] : [`r.status >= ${lo}`]), ...(hi === Infinity ? [] : [`r.status <= ${hi}`])].join(" AND ") || "1";
}

export type QueryOutcome = QueryResult & { cancelled?: boolean };

/**
 * Queries on SQLite (docs/query.md): the finished requests of the app in
 * the plan's `_time` range, newest first, from the search index's
 * candidates when the filter requires text the index can find (and they
 * are no more than the budget), else from the time index within the scan
 * budget. SQL narrows the rows (the time range, number ranges, the keys of
 * the dictionary entries and versions a term can match, the search plan's
 * cheap text tests); the filter itself is decided in JavaScript
 * (match-filter.ts) on each row SQLite yields, and the rows go through the
 * shared pipeline (run-pipes.ts).
 */
export function createQueryReader(db: Database.Database, sql: PlanSql, budget: ScanBudget, searchIndex: SearchIndexUse): QueryReader {
  const appKey = createAppLookup(db);
  const rows = createQueryRows(db);
  const stmt = {
    versions: db.prepare("SELECT id, module_id, version_id FROM versions WHERE app_key = ?"),
    dictionarySize: db.prepare("SELECT count(*) FROM (SELECT 1 FROM strings WHERE kind = ? LIMIT ?)").pluck(),
    dictionary: db.prepare("SELECT id, text FROM strings WHERE kind = ?").raw(),
    inRange: db
      .prepare("SELECT count(*) FROM requests INDEXED BY requests_by_time WHERE app_key = ? AND sort_time >= ? AND sort_time <= ?")
      .pluck(),
    inHours: db.prepare("SELECT coalesce(sum(requests), 0) FROM usage_hourly WHERE app_key = ? AND hour >= ? AND hour <= ?").pluck(),
    inClasses: db
      .prepare("SELECT coalesce(sum(requests), 0) FROM stats_class_hours WHERE app_key = ? AND hour >= ? AND hour <= ? AND status_class IN (SELECT value FROM json_each(?))")
      .pluck(),
  };
  const statements = new Map<string, Database.Statement>();
  const statement = (text: string) => {
    let s = statements.get(text);
    if (!s) {
      s = db.prepare(text);
      if (statements.size > 128) statements.clear();
      statements.set(text, s);
    }
    return s;
  };

  /** SQL every match of a top-level term passes (a superset: the filter decides), or undefined. */
  function narrowing(app: number, term: Filter): string | undefined {
    const fields = [...filterFields(term)];
    if (fields.length !== 1) return undefined;
    const [field] = fields as [string];
    if (term.kind === "range" && numberColumns.has(field)) {
      const parts: string[] = [];
      if (term.min !== -Infinity) parts.push(`r.${field} ${term.minInclusive ? ">=" : ">"} ${term.min}`);
      if (term.max !== Infinity) parts.push(`r.${field} ${term.maxInclusive ? "<=" : "<"} ${term.max}`);
      return parts.length > 0 ? parts.join(" AND ") : undefined;
    }
    const keep = compileFilter(term, typeOf);
    if (field === "module_id" || field === "version_id") {
      const keys = (stmt.versions.all(app) as { id: number; module_id: string; version_id: string }[])
        .filter((v) => keep({ get: (f) => (f === "module_id" ? v.module_id : v.version_id) }))
        .map((v) => v.id);
      return `r.version_key IN (${keys.join(", ")})`;
    }
    const kind = dictionaryFields[field];
    if (kind === undefined) return undefined;
    if ((stmt.dictionarySize.get(kind, maxDictionary + 1) as number) > maxDictionary) return undefined;
    const keys = (stmt.dictionary.all(kind) as [number, string][]).filter(([, text]) => keep({ get: () => text })).map(([id]) => id);
    const empty = keep({ get: () => "" });
    const inKeys = `r.${field} IN (${keys.join(", ")})`;
    return empty ? `(${inKeys} OR r.${field} IS NULL)` : inKeys;
  }

  /** The search index's candidates for the plan's required text: undefined when it cannot narrow, or they are too many. */
  function candidates(app: number, plan: QueryPlan): { ids: number[] } | "none" | undefined {
    if (searchIndex === "never" || plan.searchPatterns.length === 0) return undefined;
    const matches: string[] = [];
    for (const pattern of plan.searchPatterns) {
      const found = sql.search(pattern);
      if (found.none) return "none";
      if (found.match) matches.push(`(${found.match})`);
    }
    if (matches.length === 0) return undefined;
    const ids = statement(`SELECT rowid FROM request_search WHERE request_search MATCH ? LIMIT ${plan.budget.rows + 1}`)
      .pluck()
      .all(matches.join(" AND ")) as number[];
    if (ids.length > plan.budget.rows) return undefined;
    // Rows whose documents the writer has not made yet (search-doc.ts catchUp: up to a few thousand, the newest
    // ids) are candidates when they pass the patterns' cheap text tests: counted whole they would outnumber a
    // small budget right after a burst of writes, and a query the index can answer would come back partial.
    const tests = plan.searchPatterns.flatMap((pattern) => sql.search(pattern).prefilter() ?? []);
    const unindexed = statement(`${unindexedRowsSql}${tests.map((t) => ` AND ${t}`).join("")}`)
      .pluck()
      .all(app) as number[];
    for (const id of unindexed) ids.push(id);
    return ids.length > plan.budget.rows ? undefined : { ids };
  }

  return {
    query(plan: QueryPlan): QueryOutcome {
      const keep = compileFilter(plan.query.filter, typeOf);
      const pipeline = createPipeline(plan.query, { maxQueryGroups: plan.maxGroups, maxRows: plan.maxRows });
      const app = appKey(plan.appId);
      if (app === undefined) return { rows: pipeline.finish(), source: "scan", scanned: 0, cut: false };

      const terms = conjuncts(plan.query.filter);
      const where = ["r.app_key = @app", "r.sort_time >= @min", "r.sort_time <= @max"];
      const narrow = ["r.finished = 1", "r.has_record = 1"];
      for (const t of terms) {
        const n = t.kind === "time" ? undefined : narrowing(app, t);
        if (n) narrow.push(n);
      }
      const found = candidates(app, plan);
      if (found === "none") return { rows: pipeline.finish(), source: "index", scanned: 0, cut: false };
      const select = rows.selectList(requestFieldsRead(plan.query));
      let text = "";
      if (found) {
        budget.charge(found.ids.length);
        where.push("r.id IN (SELECT value FROM json_each(@ids))", ...narrow);
        text = `SELECT ${select} FROM requests r NOT INDEXED WHERE ${where.join(" AND ")} ORDER BY r.sort_time DESC, r.id DESC`;
      }
      const min = Number.isFinite(plan.time.min) ? plan.time.min : Number.MIN_SAFE_INTEGER;
      const max = Number.isFinite(plan.time.max) ? plan.time.max : Number.MAX_SAFE_INTEGER;
      // The requests of the range's hours (the Usage rollups, a few hundred rows a month): when they are within
      // the budget's rows the scan is whole whatever it finds, and SQLite tests each row without a call into JS.
      const [minHour, maxHour] = [Math.floor(min / hourUs), Math.floor(max / hourUs)];
      const hoursHold = found ? 0 : (stmt.inHours.get(app, minHour, maxHour) as number);
      // A filter on error statuses that keeps few of the range's rows: the status index gives just the rows of its statuses
      // (how many, from the Stats rollups' classes of the range's hours), all of them when they are within the
      // budget's rows, in whatever order (SQLite sorts them newest first).
      const statuses = found ? undefined : statusSet(terms);
      const classes = statuses && classRanges.flatMap((range, c) => (intersect(range, statuses).length > 0 ? [c] : []));
      const statusRows = classes ? (stmt.inClasses.get(app, minHour, maxHour, JSON.stringify(classes)) as number) : 0;
      const byStatus =
        statuses !== undefined &&
        statuses.every(errorStatusesOnly) &&
        statusRows <= plan.budget.rows &&
        statusRows <= hoursHold * statusIndexShare;
      const whole = byStatus || (!found && hoursHold <= plan.budget.rows);
      if (!found) {
        for (const pattern of plan.searchPatterns) {
          const test = sql.search(pattern).prefilter();
          if (test) narrow.push(test);
        }
        if (statuses && whole) {
          // (Not in a budgeted scan: its budget counts every row of the range, whatever its status.)
          where.push(statusSql(statuses));
          // The status index holds the error statuses only: its own condition, as it is, tells SQLite these are all.
          if (byStatus) where.push(errorStatusesSql("r.status"));
        }
        // Otherwise reqlog_spent() counts every row the time index yields, before the other tests (as a Read's scan does).
        where.push(whole ? narrow.join(" AND ") : `(reqlog_spent() OR (${narrow.join(" AND ")}))`);
        const index = byStatus ? "requests_by_status" : "requests_by_time";
        // The status index gives its rows by status: newest first costs a sort of them all, which a first stats or
        // top pipe (the same answer in any order) does without.
        const anyOrder = byStatus && (plan.query.pipes[0]?.kind === "stats" || plan.query.pipes[0]?.kind === "top");
        const order = anyOrder ? "" : " ORDER BY r.sort_time DESC, r.id DESC";
        text = `SELECT ${select} FROM requests r INDEXED BY ${index} WHERE ${where.join(" AND ")}${order}`;
      }
      const params = { app, min, max, ...(found ? { ids: JSON.stringify(found.ids) } : {}) };
      const reader = rows.reader(plan.appId);
      let stopped = false;
      for (const raw of statement(text).iterate(params) as Iterable<RawRow>) {
        reader.bind(raw);
        if (raw.finished === 1 && raw.has_record === 1 && keep(reader.row) && !pipeline.push(reader.row)) {
          stopped = true;
          break;
        }
        if (!found && !whole && budget.spent) break;
      }
      // A scan the budget stopped: the answer is of the newest rows examined, unless they were all.
      const total = !found && !whole && !stopped && budget.spent && !budget.cancelled ? (stmt.inRange.get(app, min, max) as number) : 0;
      return {
        rows: pipeline.finish(),
        source: found ? "index" : "scan",
        scanned: byStatus ? statusRows : whole ? hoursHold : budget.examined,
        ...(total > budget.examined ? { total } : {}),
        cut: pipeline.cut,
        ...(budget.cancelled ? { cancelled: true } : {}),
      };
    },
  };
}

export interface QueryReader {
  query(plan: QueryPlan): QueryOutcome;
}

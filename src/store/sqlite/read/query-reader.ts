import type Database from "better-sqlite3";
import { compileFilter, filterFields } from "../../../query/logsql/match-filter.js";
import { conjuncts, type QueryPlan } from "../../../query/logsql/plan-query.js";
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
      const hoursHold = found ? 0 : (stmt.inHours.get(app, Math.floor(min / hourUs), Math.floor(max / hourUs)) as number);
      const whole = !found && hoursHold <= plan.budget.rows;
      if (!found) {
        for (const pattern of plan.searchPatterns) {
          const test = sql.search(pattern).prefilter();
          if (test) narrow.push(test);
        }
        // Otherwise reqlog_spent() counts every row the time index yields, before the other tests (as a Read's scan does).
        where.push(whole ? narrow.join(" AND ") : `(reqlog_spent() OR (${narrow.join(" AND ")}))`);
        text = `SELECT ${select} FROM requests r INDEXED BY requests_by_time WHERE ${where.join(" AND ")} ORDER BY r.sort_time DESC, r.id DESC`;
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
        scanned: whole ? hoursHold : budget.examined,
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

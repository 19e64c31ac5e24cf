import type Database from "better-sqlite3";
import type { ReadPlan } from "../../../query/read-plan.js";
import { combinedMatchArgsSql } from "./combined-match.js";
import { createSearchPlanner, type SearchPlan } from "./search-query.js";
import { versionKeySql } from "../rows/sql.js";

/** Named parameters for a statement built for a plan: the ones it uses are the defined ones. */
export function definedParams(params: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(params).filter(([, v]) => v !== undefined));
}

/**
 * A Read plan as SQL over `requests r`: the version keys it names, its
 * filters (RE2 patterns included, through the scan budget's functions), and
 * a cache of the statements built from them.
 */
export function createPlanSql(db: Database.Database): PlanSql {
  const stmt = {
    versionKeys: db.prepare("SELECT id FROM versions WHERE app_key = ? AND module_id = ?").pluck(),
    versionKey: db.prepare(versionKeySql).pluck(),
  };
  const statements = new Map<string, Database.Statement>();
  const planner = createSearchPlanner(db);
  // The search plans of the Read running now (its transaction's dictionary).
  const searches = new Map<string, SearchPlan>();

  function search(pattern: string): SearchPlan {
    let plan = searches.get(pattern);
    if (!plan) {
      plan = planner.plan(pattern);
      searches.set(pattern, plan);
    }
    return plan;
  }

  return {
    /** Starts planning a Read (or Tail batch): search plans are made afresh, inside its transaction. */
    begin(): void {
      searches.clear();
    },

    /** The search index's part in a combined_log_regex (search-query.ts). */
    search,

    /** The version keys a plan's module/version pairs name (undefined: no version filter). */
    versionKeys(app: number, plan: ReadPlan): number[] | undefined {
      if (!plan.versions) return undefined;
      const keys = new Set<number>();
      for (const v of plan.versions) {
        if (v.versionId === undefined) {
          for (const k of stmt.versionKeys.all(app, v.moduleId) as number[]) keys.add(k);
        } else {
          const k = stmt.versionKey.get(app, v.moduleId, v.versionId) as number | undefined;
          if (k !== undefined) keys.add(k);
        }
      }
      return [...keys];
    },

    /**
     * Filters on the record's current values, RE2 patterns included: they run
     * inside SQLite through the reqlog_*_match functions (scan-budget.ts), so
     * no row is turned into a message just to be tested and dropped. A
     * combined_log_regex first meets the search plan's cheap test, which
     * spares building the line of rows that cannot match (a scan's; not for
     * the few candidates of the search index: `prefilter` false).
     * Parameters: @level, @replica (filterParams).
     */
    filters(plan: ReadPlan, versions: number[] | undefined, prefilter = true): string[] {
      const where: string[] = [];
      if (!plan.includeIncomplete) where.push("r.finished = 1");
      if (versions) where.push(`r.version_key IN (${versions.map((k) => Number(k)).join(", ")})`);
      if (plan.minimumLogLevel !== undefined) where.push("r.max_level >= @level");
      if (plan.replicaIndex !== undefined) where.push("coalesce(r.replica_index, -1) = @replica");
      if (plan.hostRegex !== undefined) where.push("reqlog_host_match(r.host, (SELECT text FROM strings WHERE id = r.host))");
      if (plan.combinedRegex !== undefined) {
        const found = search(plan.combinedRegex);
        if (found.none) where.push("0");
        const test = prefilter ? found.prefilter() : undefined;
        if (test) where.push(test);
        where.push(`reqlog_combined_match(${combinedMatchArgsSql})`);
      }
      return where.length > 0 ? where : ["1"];
    },

    /** The parameters `filters` uses. */
    filterParams(plan: ReadPlan): Record<string, unknown> {
      return definedParams({ level: plan.minimumLogLevel, replica: plan.replicaIndex });
    },

    /** A prepared statement (safeIntegers) for SQL built from a plan, cached by its text. */
    statement(sql: string): Database.Statement {
      let statement = statements.get(sql);
      if (!statement) {
        statement = db.prepare(sql).safeIntegers(true);
        if (statements.size > 256) statements.clear();
        statements.set(sql, statement);
      }
      return statement;
    },
  };
}

export interface PlanSql {
  /** Starts planning a Read (or Tail batch): search plans are made afresh, inside its transaction. */
  begin(): void;
  /** The search index's part in a combined_log_regex (search-query.ts). */
  search(pattern: string): SearchPlan;
  /** The version keys a plan's module/version pairs name (undefined: no version filter). */
  versionKeys(app: number, plan: ReadPlan): number[] | undefined;
  /**
   * Filters on the record's current values, RE2 patterns included: they run
   * inside SQLite through the reqlog_*_match functions (scan-budget.ts), so
   * no row is turned into a message just to be tested and dropped. A
   * combined_log_regex first meets the search plan's cheap test, which
   * spares building the line of rows that cannot match (a scan's; not for
   * the few candidates of the search index: `prefilter` false).
   * Parameters:
   */
  filters(plan: ReadPlan, versions: number[] | undefined, prefilter?: boolean): string[];
  /** The parameters `filters` uses. */
  filterParams(plan: ReadPlan): Record<string, unknown>;
  /** A prepared statement (safeIntegers) for SQL built from a plan, cached by its text. */
  statement(sql: string): Database.Statement;
}

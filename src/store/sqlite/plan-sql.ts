import type Database from "better-sqlite3";
import type { ReadPlan } from "../../query/read-plan.js";
import { requiredLiterals } from "../../query/regex-literals.js";
import { combinedPrefilterSql, combinedSql } from "./combined-sql.js";
import { versionKeySql } from "./sql.js";

/** Named parameters for a statement built for a plan: the ones it uses are the defined ones. */
export function definedParams(params: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(params).filter(([, v]) => v !== undefined));
}

/**
 * A Read plan as SQL over `requests r`: the version keys it names, its
 * filters (RE2 patterns included, through the scan budget's functions), and
 * a cache of the statements built from them.
 */
export function createPlanSql(db: Database.Database) {
  const stmt = {
    versionKeys: db.prepare("SELECT id FROM versions WHERE app_key = ? AND module_id = ?").pluck(),
    versionKey: db.prepare(versionKeySql).pluck(),
  };
  const statements = new Map<string, Database.Statement>();

  return {
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
     * inside SQLite through the reqlog_*_match functions, on the combined line
     * (stored, or derived in SQL) and the host as bytes, so no row is turned
     * into JS strings or messages just to be tested and dropped. Measured on
     * forge traffic (docs/benchmarks.md), this beat scanning the lines as
     * Buffers or strings in JS. Parameters: @level, @replica (filterParams).
     */
    filters(plan: ReadPlan, versions: number[] | undefined): string[] {
      const where: string[] = [];
      if (!plan.includeIncomplete) where.push("r.finished = 1");
      if (versions) where.push(`r.version_key IN (${versions.map((k) => Number(k)).join(", ")})`);
      if (plan.minimumLogLevel !== undefined) where.push("r.max_level >= @level");
      if (plan.replicaIndex !== undefined) where.push("coalesce(r.replica_index, -1) = @replica");
      if (plan.hostRegex !== undefined) where.push("reqlog_host_match(CAST(coalesce(r.host, '') AS BLOB))");
      if (plan.combinedRegex !== undefined) {
        const prefilter = combinedPrefilterSql(requiredLiterals(plan.combinedRegex));
        if (prefilter) where.push(prefilter);
        where.push(`reqlog_combined_match(CAST(${combinedSql} AS BLOB))`);
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

export type PlanSql = ReturnType<typeof createPlanSql>;

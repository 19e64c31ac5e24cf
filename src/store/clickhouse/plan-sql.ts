import type { ReadPlan } from "../../query/read-plan.js";
import { requiredLiterals } from "../../query/regex-literals.js";
import { clickhouseRegex } from "./clickhouse-regex.js";
import { combinedSql } from "./request-row.js";
import { sqlInt, sqlString } from "./sql-literal.js";

/** An RE2 test of a column (or an expression), behind a search for the literals every match contains (cheap, and skips most rows). */
function regexSql(column: string, pattern: string, field: string): string[] {
  const literals = requiredLiterals(pattern).map((l) => `position(${column}, ${sqlString(l)}) > 0`);
  return [...literals, `match(${column}, ${sqlString(clickhouseRegex(pattern, field))})`];
}

/** (module, version) pairs, ORed (a pair without a version: all of the module's), over these columns. */
export function versionsSql(versions: readonly { moduleId: string; versionId?: string }[], module: string, version: string): string {
  const pairs = versions.map((v) =>
    v.versionId === undefined
      ? `${module} = ${sqlString(v.moduleId)}`
      : `(${module} = ${sqlString(v.moduleId)} AND ${version} = ${sqlString(v.versionId)})`,
  );
  return `(${pairs.join(" OR ")})`;
}

/**
 * A Read plan's filters as SQL conditions over a request's latest version
 * (requests FINAL, where WHERE applies after the versions are merged): the
 * same tests as the SQLite backend's, RE2 patterns through match().
 */
export function planFilters(plan: ReadPlan): string[] {
  const where: string[] = [];
  if (!plan.includeIncomplete) where.push("finished = 1");
  if (plan.versions) where.push(versionsSql(plan.versions, "module_id", "version_id"));
  if (plan.minimumLogLevel !== undefined) where.push(`max_level >= ${sqlInt(plan.minimumLogLevel)}`);
  if (plan.replicaIndex !== undefined) where.push(`replica_index = ${sqlInt(plan.replicaIndex)}`); // unset: its default, -1
  if (plan.hostRegex !== undefined) where.push(...regexSql("host", plan.hostRegex, "host_regex"));
  if (plan.combinedRegex !== undefined) where.push(...regexSql(combinedSql, plan.combinedRegex, "combined_log_regex"));
  return where;
}

/** The plan's time range on sort time (start inclusive, end exclusive). */
export function timeRange(plan: ReadPlan): string[] {
  const where: string[] = [];
  if (plan.startTime !== undefined) where.push(`sort_time >= ${sqlInt(plan.startTime)}`);
  if (plan.endTime !== undefined) where.push(`sort_time < ${sqlInt(plan.endTime)}`);
  return where;
}

/** Conditions joined with AND ("1" when there are none). */
export const and = (conditions: readonly string[]) => (conditions.length > 0 ? conditions.join(" AND ") : "1");

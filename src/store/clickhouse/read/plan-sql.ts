import type { ReadPlan } from "../../../query/read-plan.js";
import { requiredLiterals } from "../../../query/regex-literals.js";
import { clickhouseRegex } from "./clickhouse-regex.js";
import { combinedLineSql, combinedSql } from "../rows/request-row.js";
import { sqlInt, sqlString } from "../rows/sql-literal.js";

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
 * The combined line a required literal is searched in: from two characters
 * before the derived line's first quote on when the literal cannot lie
 * before, which spares most of deriving the line (the stored address
 * decoded, two date formats a row) on a scan. A derived line holds `"` only
 * around its request, referrer and user agent (a field with one, the
 * address among them, is stored whole: plainFields), and its time ends two
 * characters before its first quote (`…+0000] "`); so a literal holding a
 * quote, with at most two characters before its first, is in the line only
 * where the line from there (`] "GET …`) has it too. Such a search only
 * narrows: match() still decides on the whole line.
 */
function lineSearchedFor(literal: string): string {
  const quote = literal.indexOf('"');
  return quote >= 0 && quote <= 2 ? combinedLineSql({ head: false }) : combinedSql;
}

/** An RE2 test of a column or expression (`over`), written for an outer query that selects it as `name`. */
interface PatternTest {
  over: string;
  name: string;
  regex: string;
  /** How many literal searches stand before it among the tests. */
  literals: number;
}

/**
 * A Read plan's filters as SQL conditions over a request's latest version
 * (requests FINAL, where WHERE applies after the versions are merged): the
 * same tests as the SQLite backend's, RE2 patterns through match(). Each
 * pattern comes with a search for the literals every match contains, among
 * the `tests` (cheap, and they leave out most rows).
 */
function filtersOf(plan: ReadPlan): { tests: string[]; patterns: PatternTest[] } {
  const tests: string[] = [];
  const patterns: PatternTest[] = [];
  const pattern = (over: string, name: string, source: string, field: string) => {
    const literals = requiredLiterals(source).map((l) => `position(${over === combinedSql ? lineSearchedFor(l) : over}, ${sqlString(l)}) > 0`);
    tests.push(...literals);
    patterns.push({ over, name, regex: sqlString(clickhouseRegex(source, field)), literals: literals.length });
  };
  if (!plan.includeIncomplete) tests.push("finished = 1");
  if (plan.versions) tests.push(versionsSql(plan.versions, "module_id", "version_id"));
  if (plan.minimumLogLevel !== undefined) tests.push(`max_level >= ${sqlInt(plan.minimumLogLevel)}`);
  if (plan.replicaIndex !== undefined) tests.push(`replica_index = ${sqlInt(plan.replicaIndex)}`); // unset: its default, -1
  if (plan.hostRegex !== undefined) pattern("host", "tested_host", plan.hostRegex, "host_regex");
  if (plan.combinedRegex !== undefined) pattern(combinedSql, "tested_combined", plan.combinedRegex, "combined_log_regex");
  return { tests, patterns };
}

/** The plan's filters as conditions of one WHERE (for few rows: request ids, changed records). */
export function planFilters(plan: ReadPlan): string[] {
  const { tests, patterns } = filtersOf(plan);
  return [...tests, ...patterns.map((p) => `match(${p.over}, ${p.regex})`)];
}

/**
 * The plan's filters for a scan of many rows, in two stages. ClickHouse
 * 18.16 evaluates every operand of an AND on every row, so a match() beside
 * the literals' search would still run RE2 on each row: `first` is the
 * WHERE of an inner query that also selects `columns`, `then` (the RE2
 * tests, over those) the WHERE of the outer one, which sees only the rows
 * that passed.
 */
export function scanFilters(plan: ReadPlan): { first: string[]; columns: string[]; then: string[] } {
  const { tests, patterns } = filtersOf(plan);
  // Without a literal to search for, the first stage would pass every row
  // (and on a cluster, send every row from the shards to the outer query).
  if (!patterns.some((p) => p.literals > 0)) return { first: planFilters(plan), columns: [], then: [] };
  return {
    first: tests,
    columns: patterns.map((p) => `${p.over} AS ${p.name}`),
    then: patterns.map((p) => `match(${p.name}, ${p.regex})`),
  };
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

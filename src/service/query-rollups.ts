import { histogramOf, histogramPercentile } from "../domain/latency-histogram.js";
import { addFigures, noFigures, type StatsFigures } from "../domain/stats-figures.js";
import type { Limits } from "../limits.js";
import { compileFilter } from "../query/logsql/match-filter.js";
import type { QueryPlan, RollupPlan } from "../query/logsql/plan-query.js";
import type { Filter, StatsFunc } from "../query/logsql/query-ast.js";
import { queryField } from "../query/logsql/query-fields.js";
import type { Row, Value } from "../query/logsql/query-value.js";
import { compareKeys, createPipeline, groupValue } from "../query/logsql/run-pipes.js";
import type { StatsPlan } from "../query/stats-plan.js";
import { Code, ReqlogError } from "../reqlog-error.js";
import type { Store } from "../store/store.js";

const hourUs = 3_600_000_000;

export interface RollupAnswer {
  rows: Value[][];
  cut: boolean;
  /** Requests the edges' reads examined (0 without edges). */
  scanned: number;
  /** Set when an edge's read stopped at its budget: how many requests the edges held. */
  total?: number;
}

/** What one request read from the rows adds to its group: the figures Stats keeps of it (statsFactsOf's clamps). */
function figuresOfRow(row: Row): StatsFigures {
  const latency = Math.max(0, (row.get("latency") as number | null) ?? 0);
  const status = (row.get("status") as number | null) ?? 0;
  return {
    requests: 1,
    errors: status >= 500 && status <= 599 ? 1 : 0,
    bytes: Math.max(0, (row.get("response_size") as number | null) ?? 0),
    latency: histogramOf([latency]),
  };
}

/**
 * The requests in the parts of hours at the range's ends (`_time:1h` begins
 * inside an hour): the query's filter over each edge, read from the rows as
 * the fields a group and its figures need.
 */
async function edgeRows(plan: QueryPlan, r: RollupPlan, store: Pick<Store, "query">, signal: AbortSignal) {
  const by = r.pipe.kind === "stats" ? r.pipe.by.map((b) => b.field) : r.pipe.by;
  const fields = [...new Set([...by, "latency", "response_size", "status"])];
  const columns = fields.map((name) => ({ name, type: queryField(name)!.type }));
  const rows: Row[] = [];
  let scanned = 0;
  let total: number | undefined;
  for (const edge of r.edges) {
    const filter: Filter = { kind: "and", filters: [plan.query.filter, { kind: "time", ...edge }] };
    const answer = await store.query(
      {
        ...plan,
        query: { filter, pipes: [{ kind: "fields", fields }], columns },
        time: edge,
        rollup: undefined,
        maxRows: plan.budget.rows + 1,
      },
      signal,
    );
    scanned += answer.scanned;
    if (answer.total !== undefined || answer.cut) total = (total ?? 0) + (answer.total ?? answer.scanned);
    else if (total !== undefined) total += answer.scanned;
    for (const values of answer.rows) rows.push({ get: (f) => values[fields.indexOf(f)] ?? null });
  }
  return { rows, scanned, total };
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/**
 * The Stats plan whose records add up to the query's groups: per route and
 * version only when the query needs them, in time buckets that tile the
 * query's `_time` buckets (epoch-aligned, as LogsQL's are) from the range's
 * first hour, or one bucket for the whole range without a `_time` group.
 */
function statsPlanOf(plan: QueryPlan, r: RollupPlan, limits: Limits, firstHour: number | undefined): StatsPlan {
  const timeGroup = r.pipe.kind === "stats" ? r.pipe.by.find((b) => b.field === "_time") : undefined;
  let resolutionHours = 0;
  if (timeGroup) {
    const step = timeGroup.step! / hourUs;
    const shift = ((((firstHour ?? 0) + (timeGroup.offset ?? 0) / hourUs) % step) + step) % step;
    resolutionHours = shift === 0 ? step : gcd(step, shift);
  }
  return {
    appId: plan.appId,
    ...(firstHour !== undefined ? { startHour: firstHour } : {}),
    ...(r.endHour !== undefined ? { endHour: r.endHour } : {}),
    resolutionHours,
    perVersion: r.byVersion,
    records: true,
    byRoute: r.byRoute,
    ...(r.classes ? { statusClasses: [...r.classes, ...r.partialClasses].sort() } : {}),
    topN: 0,
    maxRecords: limits.maxStatsRecords,
  };
}

/**
 * Answers a query from the Stats rollups, as the plan's `rollup` says, or
 * undefined when the rollups turn out not to hold the exact answer: the
 * records would be too many (max-stats-records), a class a status filter
 * keeps only in part has requests in the range, or the answer needs the
 * route of requests Stats counted without one (more than its routes per hour).
 * Counts and sums are exact; latency quantiles are read from the merged
 * latency histogram (in the same bucket as the exact value, as Stats's).
 */
export async function answerFromRollups(plan: QueryPlan, store: Pick<Store, "stats" | "query">, limits: Limits, signal: AbortSignal): Promise<RollupAnswer | undefined> {
  const r = plan.rollup!;
  try {
    let firstHour = r.startHour;
    const timeGroup = r.pipe.kind === "stats" && r.pipe.by.some((b) => b.field === "_time");
    if (timeGroup && firstHour === undefined) {
      // The buckets must start where the data does: ask for the range first.
      const extent = await store.stats({ ...statsPlanOf(plan, r, limits, undefined), resolutionHours: 0, records: false }, signal);
      if (extent.startHour === undefined) firstHour = 0;
      else firstHour = extent.startHour;
    }
    const result = await store.stats(statsPlanOf(plan, r, limits, firstHour), signal);
    const edges = r.edges.length > 0 ? await edgeRows(plan, r, store, signal) : { rows: [], scanned: 0, total: undefined };
    const answer = groupRecords(plan, r, result.records, edges.rows);
    return answer && { ...answer, scanned: edges.scanned, ...(edges.total !== undefined ? { total: edges.total } : {}) };
  } catch (err) {
    if (err instanceof ReqlogError && err.code === Code.RESOURCE_EXHAUSTED) return undefined;
    throw err;
  }
}

type RecordLike = StatsFigures & { startHour: number; route?: string; statusClass: number; moduleId?: string; versionId?: string };

function groupRecords(plan: QueryPlan, r: RollupPlan, records: readonly RecordLike[], edgeRows: readonly Row[]): Omit<RollupAnswer, "scanned"> | undefined {
  const keep = compileFilter(r.filter, (f) => queryField(f)!.type);
  const by = r.pipe.kind === "stats" ? r.pipe.by : r.pipe.by.map((field) => ({ field }));
  const groups = new Map<string, { key: Value[]; figures: StatsFigures }>();
  for (const record of records) {
    if (record.requests === 0) continue;
    if (r.partialClasses.includes(record.statusClass)) return undefined;
    if (r.byRoute && record.route === undefined) return undefined;
    const values: Record<string, Value> = {
      _time: record.startHour * hourUs,
      route: record.route ?? null,
      status_class: record.statusClass,
      module_id: record.moduleId ?? null,
      version_id: record.versionId ?? null,
    };
    const row: Row = { get: (f) => values[f] ?? null };
    if (!keep(row)) continue;
    const key = by.map((b) => groupValue(row, b));
    const id = JSON.stringify(key);
    let group = groups.get(id);
    if (!group) groups.set(id, (group = { key, figures: noFigures() }));
    addFigures(group.figures, record);
  }
  for (const row of edgeRows) {
    const key = by.map((b) => groupValue(row, b));
    const id = JSON.stringify(key);
    let group = groups.get(id);
    if (!group) groups.set(id, (group = { key, figures: noFigures() }));
    addFigures(group.figures, figuresOfRow(row));
  }
  if (r.pipe.kind === "stats" && by.length === 0 && groups.size === 0) groups.set("", { key: [], figures: noFigures() });
  let sorted = [...groups.values()].sort((a, b) => compareKeys(a.key, b.key));
  if (r.pipe.kind === "top") {
    sorted = sorted.sort((a, b) => b.figures.requests - a.figures.requests || compareKeys(a.key, b.key)).slice(0, r.pipe.n);
  }
  const pipeline = createPipeline(plan.query, { maxQueryGroups: plan.maxGroups, maxRows: plan.maxRows }, 1);
  for (const g of sorted) {
    const values = new Map<string, Value>(by.map((b, i) => [b.field, g.key[i]!]));
    if (r.pipe.kind === "stats") for (const f of r.pipe.funcs) values.set(f.name, resultOf(f, g.figures));
    else values.set(r.pipe.hitsName, g.figures.requests);
    if (!pipeline.push({ get: (name) => values.get(name) ?? null })) break;
  }
  return { rows: pipeline.finish(), cut: pipeline.cut };
}

function resultOf(f: StatsFunc, figures: StatsFigures): Value {
  const n = figures.requests;
  switch (f.fn) {
    case "count":
      return n;
    case "sum":
      return n === 0 ? null : figures.bytes;
    case "avg":
      return n === 0 ? null : figures.bytes / n;
    default:
      // quantile and median of latency, from the merged histogram.
      return n === 0 ? null : histogramPercentile(figures.latency, f.phi! * 100);
  }
}

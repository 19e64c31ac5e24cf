import { exceeded, type Limits } from "../../limits.js";
import { ReqlogError } from "../../reqlog-error.js";
import { checkIdentifier } from "../../write/identifiers.js";
import { filterFields } from "./match-filter.js";
import { parseQuery } from "./parse-query.js";
import type { Filter, Pipe, Query } from "./query-ast.js";

/**
 * A validated query, as a backend executes it: plain data (crosses to
 * worker threads and back as it is). The planner decides what can answer
 * it exactly: the Stats rollups (`rollup`), else the rows, narrowed by
 * `time` and, where a backend has one, a search index (`searchPatterns`),
 * within the scan budget.
 */
export interface QueryPlan {
  appId: string;
  text: string;
  query: Query;
  /** The `_time` bounds (µs, inclusive) every match lies within (from the filter's top-level `_time` terms); ±Infinity: open. */
  time: { min: number; max: number };
  /** Set when the rollups can answer the filter and the first pipe exactly. */
  rollup?: RollupPlan;
  /**
   * RE2 patterns every match's combined line satisfies (from words, phrases,
   * exact values and regexes the filter requires): what a search index can
   * narrow the rows with. Each is a necessary condition only; the filter decides.
   */
  searchPatterns: string[];
  /** Rows a scan examines, and how long it runs, before it answers from what it saw (the Read budget). */
  budget: { rows: number; ms: number };
  /** Most rows an answer holds (max-query-rows): more are cut, and the answer says so. */
  maxRows: number;
  /** Most groups a stats or top pipe holds (max-query-groups). */
  maxGroups: number;
}

/** The dimensions of the Stats rollups a query filter or group may use. */
export const rollupFields = new Set(["route", "status_class", "module_id", "version_id"]);

/**
 * How the rollups answer: their records of these hours, filtered by `filter`
 * (over route, status_class, module_id and version_id), grouped and added up
 * as the first pipe says. Status filters become status classes: those wholly
 * in (`classes`), and those partly in (`partialClasses`): the answer is
 * exact only if the range holds no request of a partly-in class.
 */
export interface RollupPlan {
  /** Hours since the epoch: [startHour, endHour); undefined: open. */
  startHour?: number;
  endHour?: number;
  /** The parts of hours at the range's ends (µs, inclusive), whose requests are read from the rows and added in. */
  edges: { min: number; max: number }[];
  filter: Filter;
  /** Classes (0 … 5) a status filter keeps whole; undefined: every class (no status filter). */
  classes?: number[];
  partialClasses: number[];
  /** The pipe the rollups answer (a stats or top pipe), pipes[0]. */
  pipe: Extract<Pipe, { kind: "stats" } | { kind: "top" }>;
  /** Whether the answer needs each record's route (a route filter or group). */
  byRoute: boolean;
  /** Whether it needs each record's module and version. */
  byVersion: boolean;
}

export interface QueryInput {
  appId: string;
  text: string;
}

const hourUs = 3_600_000_000;

/** Validates and plans a query; `nowUs` is what relative times count back from. */
export function planQuery(input: QueryInput, limits: Limits, nowUs: number): QueryPlan {
  if (input.appId === "") throw ReqlogError.invalid("required field not set: app_id");
  checkIdentifier(input.appId, "app_id");
  const bytes = Buffer.byteLength(input.text, "utf8");
  if (bytes > limits.maxQueryBytes) throw exceeded(limits, "maxQueryBytes", bytes, "query length in bytes");
  const query = parseQuery(input.text, nowUs);
  const terms = conjuncts(query.filter);
  const time = { min: -Infinity, max: Infinity };
  for (const t of terms) {
    if (t.kind !== "time") continue;
    time.min = Math.max(time.min, t.min);
    time.max = Math.min(time.max, t.max);
  }
  return {
    appId: input.appId,
    text: input.text,
    query,
    time,
    ...rollupOf(query, terms, time),
    searchPatterns: terms.flatMap(searchPatternsOf),
    budget: { rows: limits.readScanRows, ms: limits.readScanMs },
    maxRows: limits.maxQueryRows,
    maxGroups: limits.maxQueryGroups,
  };
}

/** The terms a filter ANDs at its top. */
export function conjuncts(filter: Filter): Filter[] {
  if (filter.kind === "and") return filter.filters.flatMap(conjuncts);
  if (filter.kind === "all") return [];
  return [filter];
}

/** Inclusive integer intervals. */
export type Intervals = [number, number][];

export function intersect(a: Intervals, b: Intervals): Intervals {
  const out: Intervals = [];
  for (const [lo1, hi1] of a) for (const [lo2, hi2] of b) if (Math.max(lo1, lo2) <= Math.min(hi1, hi2)) out.push([Math.max(lo1, lo2), Math.min(hi1, hi2)]);
  return out;
}

const integerText = /^-?\d{1,9}$/;

/** The statuses a status term keeps, as intervals; undefined when the term is not a plain set of statuses. */
export function statusIntervals(term: Filter): Intervals | undefined {
  switch (term.kind) {
    case "range": {
      const lo = term.min === -Infinity ? -Infinity : term.minInclusive ? Math.ceil(term.min) : Math.floor(term.min) + 1;
      const hi = term.max === Infinity ? Infinity : term.maxInclusive ? Math.floor(term.max) : Math.ceil(term.max) - 1;
      return lo <= hi ? [[lo, hi]] : [];
    }
    case "in":
      return term.values.every((v) => integerText.test(v)) ? term.values.map((v) => [Number(v), Number(v)]) : undefined;
    case "exact":
      return !term.prefix && integerText.test(term.value) ? [[Number(term.value), Number(term.value)]] : undefined;
    default:
      return undefined;
  }
}

/** The statuses of each class: 0 is everything outside 100..599. */
export const classRanges: Intervals[] = [
  [[-Infinity, 99], [600, Infinity]],
  ...[1, 2, 3, 4, 5].map((c): Intervals => [[c * 100, c * 100 + 99]]),
];

const covered = (inner: Intervals, outer: Intervals) =>
  inner.every(([lo, hi]) => {
    // Intervals in `outer` may touch: merge them as they are walked.
    let from = lo;
    for (const [a, b] of [...outer].sort((x, y) => x[0] - y[0])) if (a <= from && b >= from) from = b === Infinity ? Infinity : b + 1;
    return from > hi;
  });

function rollupOf(query: Query, terms: Filter[], time: { min: number; max: number }): { rollup?: RollupPlan } {
  const pipe = query.pipes[0];
  if (!pipe || (pipe.kind !== "stats" && pipe.kind !== "top")) return {};
  // An hour's rollup counts every request of the hour: the whole hours of the range come from the rollups, the
  // parts of hours at its ends (`_time:1h`) from the rows.
  const startHour = time.min === -Infinity ? undefined : Math.ceil(time.min / hourUs);
  const endHour = time.max === Infinity ? undefined : Math.floor((time.max + 1) / hourUs);
  if (startHour !== undefined && endHour !== undefined && startHour >= endHour) return {};
  const edges: { min: number; max: number }[] = [];
  if (startHour !== undefined && startHour * hourUs > time.min) edges.push({ min: time.min, max: startHour * hourUs - 1 });
  if (endHour !== undefined && endHour * hourUs <= time.max) edges.push({ min: endHour * hourUs, max: time.max });
  let statuses: Intervals | undefined;
  const kept: Filter[] = [];
  for (const t of terms) {
    if (t.kind === "time") continue;
    const fields = filterFields(t);
    if ([...fields].every((f) => rollupFields.has(f))) {
      kept.push(t);
      continue;
    }
    const set = fields.size === 1 && fields.has("status") ? statusIntervals(t) : undefined;
    if (!set) return {};
    statuses = statuses ? intersect(statuses, set) : set;
  }
  if (terms.some((t) => t.kind !== "time" && filterFields(t).has("_time"))) return {};
  const groups = pipe.kind === "stats" ? pipe.by : pipe.by.map((field) => ({ field, step: undefined, offset: undefined }));
  for (const b of groups) {
    if (b.field === "_time") {
      if (pipe.kind !== "stats" || b.step === undefined || b.step % hourUs !== 0 || (b.offset ?? 0) % hourUs !== 0) return {};
    } else if (!rollupFields.has(b.field) || b.step !== undefined) {
      return {};
    }
  }
  if (pipe.kind === "stats") {
    for (const f of pipe.funcs) {
      const ok =
        (f.fn === "count" && f.fields.length === 0) ||
        ((f.fn === "sum" || f.fn === "avg") && f.fields[0] === "response_size") ||
        ((f.fn === "quantile" || f.fn === "median") && f.fields[0] === "latency");
      if (!ok) return {};
    }
  }
  const classes: number[] = [];
  const partialClasses: number[] = [];
  if (statuses) {
    classRanges.forEach((range, c) => {
      if (covered(range, statuses!)) classes.push(c);
      else if (intersect(range, statuses!).length > 0) partialClasses.push(c);
    });
  }
  const named = new Set([...kept.flatMap((t) => [...filterFields(t)]), ...groups.map((b) => b.field)]);
  const filter: Filter = kept.length === 0 ? { kind: "all" } : kept.length === 1 ? kept[0]! : { kind: "and", filters: kept };
  return {
    rollup: {
      ...(startHour !== undefined ? { startHour } : {}),
      ...(endHour !== undefined ? { endHour } : {}),
      edges,
      filter,
      ...(statuses ? { classes } : {}),
      partialClasses,
      pipe,
      byRoute: named.has("route"),
      byVersion: named.has("module_id") || named.has("version_id"),
    },
  };
}

/** Fields whose text appears in a request's combined line as it is (when it needs no escaping). */
const inCombinedLine = new Set(["_msg", "combined", "ip", "nickname", "method", "resource", "http_version", "referrer", "user_agent"]);
/** Text the combined line escapes (escapeLogItem): a literal holding any is not in the line as it is. */
const escaped = /["\\\x00-\x1f\x7f]/;
const re2Literal = (s: string) => s.replace(/[\\^$.|?*+()[\]{}]/g, "\\$&");

/** The RE2 patterns on the combined line a required term implies (none when it implies nothing useful). */
function searchPatternsOf(term: Filter): string[] {
  switch (term.kind) {
    case "phrase":
    case "exact": {
      if (!inCombinedLine.has(term.field)) return [];
      const text = term.kind === "phrase" ? term.phrase : term.value;
      if (text === "" || escaped.test(text)) return [];
      return [`${term.kind === "phrase" && term.anyCase ? "(?i)" : ""}${re2Literal(text)}`];
    }
    case "in": {
      if (!inCombinedLine.has(term.field) || term.values.some((v) => v === "" || escaped.test(v))) return [];
      return [term.values.length === 1 ? re2Literal(term.values[0]!) : `(?:${term.values.map(re2Literal).join("|")})`];
    }
    case "regex":
      return term.field === "_msg" || term.field === "combined" ? [term.pattern] : [];
    default:
      return [];
  }
}

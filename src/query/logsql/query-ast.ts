/**
 * A parsed query: LogsQL's filters and pipes as plain data (no functions,
 * no classes), so a plan crosses to worker threads as it is. Numbers are
 * JavaScript numbers: times and durations in µs (exact up to 2^53, about
 * 285 years of µs since the epoch).
 */
import type { FieldType } from "./query-fields.js";
import type { Position } from "./query-lexer.js";

export type Filter =
  /** Every request (`*`, or no filter at all). */
  | { kind: "all" }
  | { kind: "and"; filters: Filter[] }
  | { kind: "or"; filters: Filter[] }
  | { kind: "not"; filter: Filter }
  /**
   * A word or phrase in the field's text (`error`, `"zip/raw"`,
   * `resource:/api/v1/admin`): the text contains it, and where it starts
   * or ends with a word character, no word character touches it there.
   * `prefix` (`err*`): only its start must be at a word's start. `anyCase`:
   * `i(…)`. An empty phrase matches an empty value; an empty prefix (`f:*`)
   * any non-empty one.
   */
  | { kind: "phrase"; field: string; phrase: string; prefix: boolean; anyCase: boolean }
  /** `f:="v"` (the whole value), `f:="v"*` (the value starts with it). */
  | { kind: "exact"; field: string; value: string; prefix: boolean }
  /** `f:in(a, b)`: the whole value is one of them. */
  | { kind: "in"; field: string; values: string[] }
  /** `f:~"RE2"`: RE2 partial match on the field's text. */
  | { kind: "regex"; field: string; pattern: string }
  /** A number field within bounds (`status:>=500`, `latency:>1.5s`, `range[1, 10)`). */
  | { kind: "range"; field: string; min: number; minInclusive: boolean; max: number; maxInclusive: boolean }
  /** A text field within bounds, by code point order (`user_agent:>"m"`); an undefined bound is open. */
  | { kind: "textRange"; field: string; min?: string; minInclusive: boolean; max?: string; maxInclusive: boolean }
  /** `f:ipv4_range(…)`: a dotted IPv4 address (the whole value) within [min, max] (as 32-bit numbers). */
  | { kind: "ipv4Range"; field: string; min: number; max: number }
  /** `_time` within [min, max] (µs, both inclusive). */
  | { kind: "time"; min: number; max: number };

export type StatsFn = "count" | "count_uniq" | "sum" | "avg" | "min" | "max" | "quantile" | "median";

export interface StatsFunc {
  fn: StatsFn;
  /** The fields it reads (none for count()). */
  fields: string[];
  /** quantile's φ (0 … 1); median's is 0.5. */
  phi?: number;
  /** The result's column name: the `as` name, or the function as written (`count()`, `quantile(0.99, latency)`). */
  name: string;
}

/** A group-by field: as it is, or in buckets of `step` (`_time:1h`, `response_size:10KB`), shifted by `offset`. */
export interface ByField {
  field: string;
  step?: number;
  offset?: number;
}

export interface SortKey {
  field: string;
  desc: boolean;
}

export type Pipe =
  | { kind: "stats"; by: ByField[]; funcs: StatsFunc[] }
  | { kind: "sort"; by: SortKey[]; offset?: number; limit?: number }
  | { kind: "limit"; n: number }
  | { kind: "offset"; n: number }
  | { kind: "fields"; fields: string[] }
  /** `top N by (f…)`: the N most frequent value sets, with their count in `hitsName`. */
  | { kind: "top"; n: number; by: string[]; hitsName: string }
  | { kind: "filter"; filter: Filter };

/** A result column: its name and the type of its values. */
export interface Column {
  name: string;
  type: FieldType;
  /** A group of a stats or top pipe (one of its `by` fields), as opposed to a value. */
  group?: boolean;
}

export interface Query {
  filter: Filter;
  pipes: Pipe[];
  /** What each result row holds, in order. */
  columns: Column[];
}

export type { Position };

import { exceeded } from "../../limits.js";
import { compileFilter, filterFields } from "./match-filter.js";
import type { ByField, Filter, Pipe, Query, StatsFunc } from "./query-ast.js";
import { type FieldType, queryField } from "./query-fields.js";
import { compareValues, type Row, type Value } from "./query-value.js";

/**
 * Runs a query's pipes over the rows its filter selected, in JavaScript: the
 * same code for every backend (a backend that computes a stats pipe in SQL
 * feeds its result rows in after it, `startAt`). Rows go through one at a
 * time until a pipe must see them all (stats, sort, top); `push` says when
 * no more are needed (a limit was reached), so a scan can stop early.
 */
export interface Pipeline {
  /** Feeds one row; false once the pipeline needs no more. The row may be reused by the caller after the call. */
  push(row: Row): boolean;
  /** The result rows, a value per column. */
  finish(): Value[][];
  /** Whether more rows came out than `limits.maxRows`, and were left out. */
  readonly cut: boolean;
}

export interface PipelineLimits {
  /** Most groups a stats or top pipe may hold (max-query-groups). */
  maxQueryGroups: number;
  /** Most result rows (max-query-rows); the rest are cut. */
  maxRows?: number;
}

interface Stage {
  push(row: Row): boolean;
  end(): void;
}

/** The type of each field a pipe may read: request fields, then the columns of the pipe before. */
export type TypeOf = (field: string) => FieldType;

const requestType: TypeOf = (field) => queryField(field)?.type ?? "text";

/**
 * The pipeline of `query.pipes[startAt…]` (rows going in have the fields of
 * the pipe before `startAt`, or the request's). Stats groups come out by
 * their group values, ascending; rows not sorted keep the order they came in.
 */
export function createPipeline(query: Query, limits: PipelineLimits, startAt = 0): Pipeline {
  const pipes = query.pipes.slice(startAt);
  const out: Value[][] = [];
  const maxRows = limits.maxRows ?? Infinity;
  let cut = false;
  const columns = query.columns.map((c) => c.name);
  const typeAt = typesBefore(query, startAt);
  const needed = neededFields(pipes, columns);

  let stage: Stage = {
    push(row) {
      if (out.length >= maxRows) {
        cut = true;
        return false;
      }
      out.push(columns.map((c) => row.get(c)));
      return true;
    },
    end() {},
  };
  for (let i = pipes.length - 1; i >= 0; i--) {
    stage = stageOf(pipes[i]!, stage, typeAt[i]!, needed[i + 1]!, limits);
  }
  const first = stage;
  return {
    push: (row) => first.push(row),
    finish() {
      first.end();
      return out;
    },
    get cut() {
      return cut;
    },
  };
}

/** The field types each pipe sees (index i: before pipes[i] of the slice starting at `startAt`). */
function typesBefore(query: Query, startAt: number): TypeOf[] {
  const types: TypeOf[] = [];
  let current: TypeOf = requestType;
  const all = query.pipes;
  for (let i = 0; i <= all.length; i++) {
    if (i >= startAt) types.push(current);
    const pipe = all[i];
    if (!pipe) break;
    if (pipe.kind === "stats" || pipe.kind === "top") {
      const before = current;
      const produced = new Map<string, FieldType>();
      if (pipe.kind === "stats") {
        for (const b of pipe.by) produced.set(b.field, before(b.field));
        for (const f of pipe.funcs) produced.set(f.name, statsType(f, before));
      } else {
        for (const b of pipe.by) produced.set(b, before(b));
        produced.set(pipe.hitsName, "int");
      }
      current = (field) => produced.get(field) ?? "text";
    }
  }
  return types;
}

export function statsType(f: StatsFunc, typeOf: TypeOf): FieldType {
  if (f.fn === "count" || f.fn === "count_uniq") return "int";
  if (f.fn === "avg") return "float";
  return typeOf(f.fields[0]!);
}

/** For each pipe index (and the end), the fields the pipes from there on read. */
function neededFields(pipes: Pipe[], columns: string[]): Set<string>[] {
  const needed: Set<string>[] = new Array(pipes.length + 1);
  let current = new Set(columns);
  needed[pipes.length] = current;
  for (let i = pipes.length - 1; i >= 0; i--) {
    const p = pipes[i]!;
    const next = new Set(current);
    switch (p.kind) {
      case "stats":
        next.clear();
        for (const b of p.by) next.add(b.field);
        for (const f of p.funcs) for (const x of f.fields) next.add(x);
        break;
      case "top":
        next.clear();
        for (const b of p.by) next.add(b);
        break;
      case "sort":
        for (const k of p.by) next.add(k.field);
        break;
      case "filter":
        filterFields(p.filter, next);
        break;
      case "fields":
        next.clear();
        for (const f of p.fields) next.add(f);
        break;
      default:
        break;
    }
    needed[i] = next;
    current = next;
  }
  return needed;
}

/** A row's values of these fields, kept after the caller moves on (sort, materialised rows). */
function snapshot(row: Row, fields: Set<string>): Row {
  const values = new Map<string, Value>();
  for (const f of fields) values.set(f, row.get(f));
  return { get: (f) => values.get(f) ?? null };
}

function stageOf(pipe: Pipe, next: Stage, typeOf: TypeOf, neededAfter: Set<string>, limits: PipelineLimits): Stage {
  switch (pipe.kind) {
    case "filter": {
      const keep = compileFilter(pipe.filter, typeOf);
      return { push: (row) => (keep(row) ? next.push(row) : true), end: () => next.end() };
    }
    case "fields":
      return next;
    case "limit": {
      let seen = 0;
      return {
        push(row) {
          if (seen >= pipe.n) return false;
          seen++;
          return next.push(row) && seen < pipe.n;
        },
        end: () => next.end(),
      };
    }
    case "offset": {
      let skipped = 0;
      return {
        push(row) {
          if (skipped < pipe.n) {
            skipped++;
            return true;
          }
          return next.push(row);
        },
        end: () => next.end(),
      };
    }
    case "sort": {
      const rows: Row[] = [];
      const keep = new Set([...neededAfter, ...pipe.by.map((k) => k.field)]);
      return {
        push(row) {
          rows.push(snapshot(row, keep));
          return true;
        },
        end() {
          rows.sort((a, b) => {
            for (const k of pipe.by) {
              const c = compareValues(a.get(k.field), b.get(k.field));
              if (c !== 0) return k.desc ? -c : c;
            }
            return 0;
          });
          const from = pipe.offset ?? 0;
          const to = pipe.limit === undefined ? rows.length : from + pipe.limit;
          for (let i = from; i < Math.min(to, rows.length); i++) if (!next.push(rows[i]!)) break;
          next.end();
        },
      };
    }
    case "stats":
      return statsStage(pipe.by, pipe.funcs, next, typeOf, limits);
    case "top":
      return topStage(pipe, next, limits);
  }
}

/** A group value of a row: the field's value, or its bucket's start (`_time:1h`: the hour). */
export function groupValue(row: Row, by: ByField): Value {
  const v = row.get(by.field);
  if (by.step === undefined || typeof v !== "number") return v;
  const offset = by.offset ?? 0;
  return Math.floor((v + offset) / by.step) * by.step - offset;
}

interface Aggregate {
  add(row: Row): void;
  result(): Value;
}

function aggregateOf(f: StatsFunc): Aggregate {
  const [field] = f.fields;
  switch (f.fn) {
    case "count": {
      let n = 0;
      const fields = f.fields;
      return {
        add(row) {
          if (fields.length === 0 || fields.some((x) => !isEmpty(row.get(x)))) n++;
        },
        result: () => n,
      };
    }
    case "count_uniq": {
      const seen = new Set<string>();
      return {
        add(row) {
          const values = f.fields.map((x) => row.get(x));
          if (values.every(isEmpty)) return;
          seen.add(JSON.stringify(values));
        },
        result: () => seen.size,
      };
    }
    case "sum":
    case "avg": {
      let sum = 0;
      let n = 0;
      return {
        add(row) {
          const v = row.get(field!);
          if (typeof v !== "number") return;
          sum += v;
          n++;
        },
        result: () => (n === 0 ? null : f.fn === "sum" ? sum : sum / n),
      };
    }
    case "min":
    case "max": {
      let best: Value = null;
      const sign = f.fn === "min" ? -1 : 1;
      return {
        add(row) {
          const v = row.get(field!);
          if (isEmpty(v)) return;
          if (best === null || compareValues(v, best) * sign > 0) best = v;
        },
        result: () => best,
      };
    }
    case "quantile":
    case "median": {
      const values: number[] = [];
      return {
        add(row) {
          const v = row.get(field!);
          if (typeof v === "number") values.push(v);
        },
        result: () => nearestRank(values, f.phi!),
      };
    }
  }
}

/** The nearest-rank φ-quantile: the value at rank ⌈φ·n⌉ (at least 1) in ascending order; null for no values. */
export function nearestRank(values: number[], phi: number): number | null {
  if (values.length === 0) return null;
  values.sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil(phi * values.length));
  return values[Math.min(rank, values.length) - 1]!;
}

const isEmpty = (v: Value) => v === null || v === "";

/** The refusal of a stats or top pipe with more than max-query-groups groups. */
export function tooManyGroups(limits: Pick<PipelineLimits, "maxQueryGroups">) {
  return exceeded(limits, "maxQueryGroups", `more than ${limits.maxQueryGroups}`, "number of groups", "group by fewer or coarser fields, or narrow the filter");
}

function statsStage(by: ByField[], funcs: StatsFunc[], next: Stage, _typeOf: TypeOf, limits: PipelineLimits): Stage {
  const groups = new Map<string, { key: Value[]; aggregates: Aggregate[] }>();
  return {
    push(row) {
      let key: Value[] | undefined;
      let id: string;
      if (by.length === 1) {
        // One field (the usual `stats by (ip)`): its value tagged by type is the group's id, no array made.
        const v = groupValue(row, by[0]!);
        id = typeof v === "number" ? `n${v}` : v === null ? "z" : `s${v}`;
      } else {
        key = by.map((b) => groupValue(row, b));
        id = by.length === 0 ? "" : JSON.stringify(key);
      }
      let group = groups.get(id);
      if (!group) {
        if (groups.size >= limits.maxQueryGroups) throw tooManyGroups(limits);
        groups.set(id, (group = { key: key ?? by.map((b) => groupValue(row, b)), aggregates: funcs.map(aggregateOf) }));
      }
      for (const a of group.aggregates) a.add(row);
      return true;
    },
    end() {
      if (by.length === 0 && groups.size === 0) groups.set("", { key: [], aggregates: funcs.map(aggregateOf) });
      const sorted = [...groups.values()].sort((a, b) => compareKeys(a.key, b.key));
      for (const g of sorted) {
        const values = new Map<string, Value>();
        by.forEach((b, i) => values.set(b.field, g.key[i]!));
        funcs.forEach((f, i) => values.set(f.name, g.aggregates[i]!.result()));
        if (!next.push({ get: (name) => values.get(name) ?? null })) break;
      }
      next.end();
    },
  };
}

export function compareKeys(a: Value[], b: Value[]): number {
  for (let i = 0; i < a.length; i++) {
    const c = compareValues(a[i]!, b[i]!);
    if (c !== 0) return c;
  }
  return 0;
}

function topStage(pipe: Extract<Pipe, { kind: "top" }>, next: Stage, limits: PipelineLimits): Stage {
  const counts = new Map<string, { key: Value[]; hits: number }>();
  return {
    push(row) {
      const key = pipe.by.map((f) => row.get(f));
      const id = JSON.stringify(key);
      let entry = counts.get(id);
      if (!entry) {
        if (counts.size >= limits.maxQueryGroups) throw tooManyGroups(limits);
        counts.set(id, (entry = { key, hits: 0 }));
      }
      entry.hits++;
      return true;
    },
    end() {
      const sorted = [...counts.values()].sort((a, b) => b.hits - a.hits || compareKeys(a.key, b.key)).slice(0, pipe.n);
      for (const e of sorted) {
        const values = new Map<string, Value>(pipe.by.map((f, i) => [f, e.key[i]!]));
        values.set(pipe.hitsName, e.hits);
        if (!next.push({ get: (name) => values.get(name) ?? null })) break;
      }
      next.end();
    },
  };
}

/** The filters and pipes a row path evaluates, with every field it reads from a request. */
export function requestFieldsRead(query: Query, filter: Filter = query.filter): Set<string> {
  const fields = filterFields(filter);
  const needed = neededFields(query.pipes, query.columns.map((c) => c.name));
  for (const f of needed[0]!) fields.add(f);
  return fields;
}

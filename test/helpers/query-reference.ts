/**
 * The reference evaluator of reqlog's query language: a plain, slow reading
 * of docs/query.md over RequestLog records in memory, written apart from
 * the code the backends run (src/query/logsql/match-filter.ts and
 * run-pipes.ts), so that the store contract can check every backend's
 * answers against it. It shares only the parser (the AST) and the
 * definitions of the Stats route and status class.
 */
import type { RequestLog } from "../../gen/reqlog/v1/log_service_pb.js";
import { parseQuery } from "../../src/query/logsql/parse-query.js";
import type { ByField, Filter, Pipe, StatsFunc } from "../../src/query/logsql/query-ast.js";
import { type FieldType, queryField } from "../../src/query/logsql/query-fields.js";
import { statsFactsOf, statusClassOf } from "../../src/write/stats-facts.js";

export type RefValue = string | number | null;
type RefRow = Record<string, RefValue>;

export interface RefResult {
  columns: string[];
  rows: RefValue[][];
}

const utf8 = new TextDecoder();

/** Every field of a finished request, as docs/query.md defines it. */
export function referenceRow(log: RequestLog): RefRow {
  const bool = (b: boolean) => (b ? "true" : "false");
  const lines = log.line;
  return {
    _time: Number(log.endTime),
    _msg: log.combined,
    combined: log.combined,
    route: statsFactsOf(log).route,
    status_class: statusClassOf(log.status),
    line: lines.map((l) => l.logMessage).join("\n"),
    level: lines.length === 0 ? null : Math.max(...lines.map((l) => l.level)),
    app_id: log.appId,
    module_id: log.moduleId,
    version_id: log.versionId,
    request_id: utf8.decode(log.requestId),
    ip: log.ip,
    nickname: log.nickname,
    start_time: Number(log.startTime),
    end_time: Number(log.endTime),
    latency: Number(log.latency),
    mcycles: Number(log.mcycles),
    method: log.method,
    resource: log.resource,
    http_version: log.httpVersion,
    status: log.status,
    response_size: Number(log.responseSize),
    referrer: log.referrer,
    user_agent: log.userAgent,
    url_map_entry: log.urlMapEntry,
    api_mcycles: Number(log.apiMcycles),
    host: log.host,
    cost: log.cost,
    task_queue_name: log.taskQueueName,
    task_name: log.taskName,
    was_loading_request: bool(log.wasLoadingRequest),
    pending_time: Number(log.pendingTime),
    replica_index: log.replicaIndex,
    finished: bool(log.finished),
    clone_key: utf8.decode(log.cloneKey),
    platform_release: utf8.decode(log.platformRelease),
    exit_reason: log.exitReason,
    was_throttled_for_time: bool(log.wasThrottledForTime),
    was_throttled_for_requests: bool(log.wasThrottledForRequests),
    throttled_time: Number(log.throttledTime),
    server_name: utf8.decode(log.serverName),
  };
}

function rfc3339(us: number): string {
  const whole = new Date(Math.floor(us / 1e6) * 1000).toISOString().slice(0, 19);
  const frac = String(us % 1e6).padStart(6, "0").replace(/0+$/, "");
  return `${whole}${frac === "" ? "" : `.${frac}`}Z`;
}

function text(v: RefValue, type: FieldType): string {
  if (v === null) return "";
  if (typeof v === "string") return v;
  if (type === "time") return rfc3339(v);
  return Number.isInteger(v) ? BigInt(v).toString() : String(v);
}

/** Code point order: the order of the UTF-8 bytes. */
function cmpText(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

function cmp(a: RefValue, b: RefValue): number {
  if (a === null || b === null) return a === b ? 0 : a === null ? -1 : 1;
  if (typeof a === "number" && typeof b === "number") return Math.sign(a - b);
  return cmpText(String(a), String(b));
}

// ("-" needs no escape outside a class, and a "u" pattern refuses one.)
const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
const wordRe = /[\p{L}\p{Nd}_]/u;

function phraseMatches(value: string, phrase: string, prefix: boolean): boolean {
  if (phrase === "") return prefix ? value.length > 0 : value.length === 0;
  const chars = Array.from(phrase);
  const before = wordRe.test(chars[0]!) ? "(?<![\\p{L}\\p{Nd}_])" : "";
  const after = !prefix && wordRe.test(chars.at(-1)!) ? "(?![\\p{L}\\p{Nd}_])" : "";
  return new RegExp(`${before}${escapeRe(phrase)}${after}`, "u").test(value);
}

function ipNumber(s: string): number | undefined {
  const parts = s.split(".");
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)) return undefined;
  return parts.reduce((n, p) => n * 256 + Number(p), 0);
}

type Types = (field: string) => FieldType;

function matches(f: Filter, row: RefRow, types: Types): boolean {
  const t = (field: string) => text(row[field] ?? null, types(field));
  switch (f.kind) {
    case "all":
      return true;
    case "and":
      return f.filters.every((x) => matches(x, row, types));
    case "or":
      return f.filters.some((x) => matches(x, row, types));
    case "not":
      return !matches(f.filter, row, types);
    case "phrase":
      return f.anyCase
        ? phraseMatches(t(f.field).toLowerCase(), f.phrase.toLowerCase(), f.prefix)
        : phraseMatches(t(f.field), f.phrase, f.prefix);
    case "exact":
      return f.prefix ? t(f.field).startsWith(f.value) : t(f.field) === f.value;
    case "in":
      return f.values.includes(t(f.field));
    case "regex":
      // RE2 and JavaScript agree on the patterns the property tests draw.
      return new RegExp(f.pattern, "u").test(t(f.field));
    case "range": {
      const v = row[f.field];
      if (typeof v !== "number") return false;
      return (f.minInclusive ? v >= f.min : v > f.min) && (f.maxInclusive ? v <= f.max : v < f.max);
    }
    case "textRange": {
      const v = t(f.field);
      const lo = f.min === undefined ? 1 : cmpText(v, f.min);
      const hi = f.max === undefined ? -1 : cmpText(v, f.max);
      return (lo > 0 || (lo === 0 && f.minInclusive)) && (hi < 0 || (hi === 0 && f.maxInclusive));
    }
    case "ipv4Range": {
      const n = ipNumber(t(f.field));
      return n !== undefined && n >= f.min && n <= f.max;
    }
    case "time": {
      const v = row._time as number;
      return v >= f.min && v <= f.max;
    }
  }
}

function bucket(row: RefRow, b: ByField): RefValue {
  const v = row[b.field] ?? null;
  if (b.step === undefined || typeof v !== "number") return v;
  const o = b.offset ?? 0;
  return Math.floor((v + o) / b.step) * b.step - o;
}

const empty = (v: RefValue) => v === null || v === "";

function aggregate(f: StatsFunc, rows: RefRow[]): RefValue {
  const nums = () => rows.map((r) => r[f.fields[0]!]).filter((v): v is number => typeof v === "number");
  switch (f.fn) {
    case "count":
      return f.fields.length === 0 ? rows.length : rows.filter((r) => f.fields.some((x) => !empty(r[x] ?? null))).length;
    case "count_uniq":
      return new Set(rows.map((r) => f.fields.map((x) => r[x] ?? null)).filter((vs) => !vs.every(empty)).map((vs) => JSON.stringify(vs))).size;
    case "sum": {
      const n = nums();
      return n.length === 0 ? null : n.reduce((a, b) => a + b, 0);
    }
    case "avg": {
      const n = nums();
      return n.length === 0 ? null : n.reduce((a, b) => a + b, 0) / n.length;
    }
    case "min":
    case "max": {
      const vs = rows.map((r) => r[f.fields[0]!] ?? null).filter((v) => !empty(v));
      if (vs.length === 0) return null;
      return vs.reduce((a, b) => ((f.fn === "min" ? cmp(b, a) < 0 : cmp(b, a) > 0) ? b : a));
    }
    case "quantile":
    case "median": {
      const n = nums().sort((a, b) => a - b);
      if (n.length === 0) return null;
      return n[Math.min(n.length, Math.max(1, Math.ceil(f.phi! * n.length))) - 1]!;
    }
  }
}

function cmpRows(keys: RefValue[][], a: number, b: number): number {
  for (let i = 0; i < keys[a]!.length; i++) {
    const c = cmp(keys[a]![i]!, keys[b]![i]!);
    if (c !== 0) return c;
  }
  return 0;
}

function applyPipe(pipe: Pipe, rows: RefRow[], types: Types): { rows: RefRow[]; types: Types } {
  switch (pipe.kind) {
    case "filter":
      return { rows: rows.filter((r) => matches(pipe.filter, r, types)), types };
    case "fields":
    case "offset":
      return { rows: pipe.kind === "offset" ? rows.slice(pipe.n) : rows, types };
    case "limit":
      return { rows: rows.slice(0, pipe.n), types };
    case "sort": {
      const sorted = [...rows].sort((a, b) => {
        for (const k of pipe.by) {
          const c = cmp(a[k.field] ?? null, b[k.field] ?? null);
          if (c !== 0) return k.desc ? -c : c;
        }
        return 0;
      });
      const from = pipe.offset ?? 0;
      return { rows: sorted.slice(from, pipe.limit === undefined ? undefined : from + pipe.limit), types };
    }
    case "stats": {
      const groups = new Map<string, { key: RefValue[]; rows: RefRow[] }>();
      for (const r of rows) {
        const key = pipe.by.map((b) => bucket(r, b));
        const id = JSON.stringify(key);
        if (!groups.has(id)) groups.set(id, { key, rows: [] });
        groups.get(id)!.rows.push(r);
      }
      if (pipe.by.length === 0 && groups.size === 0) groups.set("[]", { key: [], rows: [] });
      const list = [...groups.values()];
      const order = list.map((_, i) => i).sort((a, b) => cmpRows(list.map((g) => g.key), a, b));
      const out = order.map((i) => {
        const g = list[i]!;
        const row: RefRow = {};
        pipe.by.forEach((b, j) => (row[b.field] = g.key[j]!));
        for (const f of pipe.funcs) row[f.name] = aggregate(f, g.rows);
        return row;
      });
      const produced = new Map<string, FieldType>();
      for (const b of pipe.by) produced.set(b.field, types(b.field));
      for (const f of pipe.funcs) {
        produced.set(f.name, f.fn === "count" || f.fn === "count_uniq" ? "int" : f.fn === "avg" ? "float" : types(f.fields[0]!));
      }
      return { rows: out, types: (x) => produced.get(x) ?? "text" };
    }
    case "top": {
      const counts = new Map<string, { key: RefValue[]; hits: number }>();
      for (const r of rows) {
        const key = pipe.by.map((b) => r[b] ?? null);
        const id = JSON.stringify(key);
        counts.set(id, { key, hits: (counts.get(id)?.hits ?? 0) + 1 });
      }
      const list = [...counts.values()];
      const keys = list.map((e) => e.key);
      const order = list.map((_, i) => i).sort((a, b) => list[b]!.hits - list[a]!.hits || cmpRows(keys, a, b));
      const out = order.slice(0, pipe.n).map((i) => {
        const row: RefRow = {};
        pipe.by.forEach((b, j) => (row[b] = list[i]!.key[j]!));
        row[pipe.hitsName] = list[i]!.hits;
        return row;
      });
      const produced = new Map<string, FieldType>(pipe.by.map((b) => [b, types(b)]));
      produced.set(pipe.hitsName, "int");
      return { rows: out, types: (x) => produced.get(x) ?? "text" };
    }
  }
}

/**
 * A query's answer over these requests (each as getRequests returns it,
 * with its lines): the finished ones, filtered, newest first (ties in the
 * order given), through the pipes, as the result's columns.
 */
export function referenceQuery(logs: readonly RequestLog[], query: string, nowUs: number): RefResult {
  const q = parseQuery(query, nowUs);
  let types: Types = (f) => queryField(f)?.type ?? "text";
  const order = logs
    .map((log, i) => ({ log, i }))
    .filter(({ log }) => log.finished)
    .sort((a, b) => Number(b.log.endTime - a.log.endTime) || a.i - b.i);
  let rows = order.map(({ log }) => referenceRow(log)).filter((r) => matches(q.filter, r, types));
  for (const pipe of q.pipes) ({ rows, types } = applyPipe(pipe, rows, types));
  const columns = q.columns.map((c) => c.name);
  return { columns, rows: rows.map((r) => columns.map((c) => r[c] ?? null)) };
}

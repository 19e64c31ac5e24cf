import type { QueryPlan } from "../../../query/logsql/plan-query.js";
import type { ByField, Filter, Pipe, StatsFunc } from "../../../query/logsql/query-ast.js";
import { type FieldType, isNumeric, queryField } from "../../../query/logsql/query-fields.js";
import { clickhouseRegex } from "./clickhouse-regex.js";
import { requestFieldsRead } from "../../../query/logsql/run-pipes.js";
import { combinedSql, startTimeSql } from "../rows/request-row.js";
import { bytesToText, sqlInt, sqlString } from "../rows/sql-literal.js";

/**
 * Query fields as ClickHouse expressions over a request's latest version
 * (`requests FINAL`, finished requests only: `_time` and `end_time` are the
 * sort time). Fields with no exact expression here (the Stats route, app
 * lines, the fields kept in `extra`) are decided in reqlog on the rows.
 */
const fieldSql: Record<string, string> = {
  _time: "sort_time",
  end_time: "sort_time",
  start_time: startTimeSql,
  _msg: combinedSql,
  combined: combinedSql,
  status_class: "multiIf(status >= 100 AND status <= 599, intDiv(status, 100), 0)",
  level: "if(max_level >= 0, max_level, NULL)",
  app_id: "app",
  module_id: "module_id",
  version_id: "version_id",
  ip: "ip",
  latency: "latency",
  mcycles: "mcycles",
  method: "method",
  resource: "resource",
  http_version: "http_version",
  status: "status",
  response_size: "response_size",
  referrer: "referrer",
  user_agent: "user_agent",
  url_map_entry: "url_map_entry",
  host: "host",
  replica_index: "replica_index",
  finished: "'true'",
  request_id: "request_id",
};

/** Fields whose values SQL gives as the query language has them (request_id: as its bytes, turned to text after). */
export const sqlField = (field: string) => fieldSql[field];
const typeOf = (field: string): FieldType => queryField(field)?.type ?? "text";

/** A field's text in SQL, as filters read it (numbers as decimal text, no value for empty `level`). */
function textSql(field: string): string | undefined {
  const e = fieldSql[field];
  if (e === undefined || field === "request_id") return undefined;
  if (field === "level") return "if(max_level >= 0, toString(max_level), '')";
  const type = typeOf(field);
  if (type === "float") return undefined;
  return isNumeric(type) ? `toString(${e})` : e;
}

/** A filter in SQL: `sql` passes every match; `exact` when it passes nothing else. */
export interface FilterSql {
  sql: string;
  exact: boolean;
}

const yes: FilterSql = { sql: "1", exact: false };
const wordClass = "[^\\pL\\p{Nd}_]";
const re2Literal = (s: string) => s.replace(/[\\^$.|?*+()[\]{}]/g, "\\$&");
const isWord = (c: string | undefined) => c !== undefined && /[\p{L}\p{Nd}_]/u.test(c);

/** LogsQL's phrase rule as an RE2 pattern for match(): word boundaries where the phrase starts (ends) with a word character. */
function phraseRegex(phrase: string, prefix: boolean): string {
  const chars = Array.from(phrase);
  const start = isWord(chars[0]) ? `(^|${wordClass})` : "";
  const end = !prefix && isWord(chars.at(-1)) ? `($|${wordClass})` : "";
  return `(?-s:${start}${re2Literal(phrase)}${end})`;
}

/** What only the fixed parts of a derived combined line hold between its pieces (combinedSql): a space, a quote, a bracket. */
const lineSeparators = /[ "[\]]/;
const monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
/** Whether text may lie in a line's time (`27/Nov/2026:21:00:00`) or its other fixed text (`-`, `+0000`): a superset. */
function mayBeFixedText(text: string): boolean {
  if (text === "-" || "+0000".includes(text)) return true;
  if (!/^[0-9/:A-Za-z]+$/.test(text)) return false;
  const letters = text.match(/[A-Za-z]+/g) ?? [];
  return letters.length === 0 || (letters.length === 1 && monthNames.some((m) => m.includes(letters[0]!)));
}
/** A derived line's pieces that are fields, space-separated (`-` for an empty one is fixed text). */
const linePiecesSql = `concat(${["ip", "method", "resource", "http_version", "toString(status)", "toString(response_size)", "referrer", "user_agent"].join(", ' ', ")})`;

/**
 * A test of the combined line without building the lines ClickHouse derives
 * (a date format and a concat of every field a row, most of a phrase
 * filter's time): text with no separator in it lies within one piece of a
 * line, so unless it may be fixed text, a derived line holds it where its
 * fields, space-separated, do; and what is around it there (a space, or the
 * text's start or end) is no word character, as the line's separators are
 * not. Undefined when the text may be elsewhere.
 */
function onLinePieces(text: string, test: (expression: string) => string): string | undefined {
  if (lineSeparators.test(text) || mayBeFixedText(text)) return undefined;
  return `if(combined != '', ${test("combined")}, ${test(linePiecesSql)})`;
}

/** A filter compiled to SQL over `requests` (see FilterSql). */
export function filterSql(f: Filter): FilterSql {
  switch (f.kind) {
    case "all":
      return { sql: "1", exact: true };
    case "and": {
      const parts = f.filters.map(filterSql);
      const kept = parts.filter((p) => p.sql !== "1");
      return { sql: kept.length === 0 ? "1" : kept.map((p) => `(${p.sql})`).join(" AND "), exact: parts.every((p) => p.exact) };
    }
    case "or": {
      const parts = f.filters.map(filterSql);
      if (parts.some((p) => p.sql === "1")) return { sql: "1", exact: parts.every((p) => p.exact) };
      return { sql: parts.map((p) => `(${p.sql})`).join(" OR "), exact: parts.every((p) => p.exact) };
    }
    case "not": {
      const inner = filterSql(f.filter);
      return inner.exact ? { sql: `NOT (${inner.sql})`, exact: true } : yes;
    }
    case "time":
      return { sql: [f.min !== -Infinity ? `sort_time >= ${sqlInt(f.min)}` : "", f.max !== Infinity ? `sort_time <= ${sqlInt(f.max)}` : ""].filter(Boolean).join(" AND ") || "1", exact: true };
    case "range": {
      // `level`'s column, not its nullable expression: NOT of a NULL comparison would leave the row out.
      const e = f.field === "level" ? "max_level" : fieldSql[f.field];
      if (e === undefined || !isNumeric(typeOf(f.field))) return yes;
      const parts: string[] = [];
      if (f.min !== -Infinity) parts.push(`${e} ${f.minInclusive ? ">=" : ">"} ${numberSql(f.min)}`);
      if (f.max !== Infinity) parts.push(`${e} ${f.maxInclusive ? "<=" : "<"} ${numberSql(f.max)}`);
      if (f.field === "level") parts.unshift("max_level >= 0");
      return { sql: parts.join(" AND ") || "1", exact: true };
    }
    case "textRange": {
      const t = textSql(f.field);
      if (t === undefined) return yes;
      const parts: string[] = [];
      if (f.min !== undefined) parts.push(`${t} ${f.minInclusive ? ">=" : ">"} ${sqlString(f.min)}`);
      if (f.max !== undefined) parts.push(`${t} ${f.maxInclusive ? "<=" : "<"} ${sqlString(f.max)}`);
      return { sql: parts.join(" AND ") || "1", exact: true };
    }
    case "exact":
    case "in": {
      const values = f.kind === "exact" ? [f.value] : f.values;
      if (f.field === "request_id") {
        if (f.kind === "exact" && f.prefix) return yes;
        // Ids are kept as their bytes (latin1 text): the text's UTF-8 bytes name the id, unless the text stands for bytes that are not UTF-8.
        if (values.some((v) => v.includes("\ufffd"))) return yes;
        return { sql: `request_id IN (${values.map((v) => sqlString(bytesToText(Buffer.from(v, "utf8")))).join(", ")})`, exact: true };
      }
      const t = textSql(f.field);
      if (t === undefined) return yes;
      if (f.kind === "exact" && f.prefix) return { sql: `startsWith(${t}, ${sqlString(f.value)})`, exact: true };
      return { sql: `${t} IN (${values.map(sqlString).join(", ")})`, exact: true };
    }
    case "phrase": {
      const t = textSql(f.field);
      if (t === undefined) return yes;
      if (f.phrase === "") return { sql: f.prefix ? `${t} != ''` : `${t} = ''`, exact: true };
      if (f.anyCase) return { sql: `positionCaseInsensitiveUTF8(${t}, ${sqlString(f.phrase)}) > 0`, exact: false };
      const chars = Array.from(f.phrase);
      const bounded = isWord(chars[0]) || (!f.prefix && isWord(chars.at(-1)));
      // match() alone when bounded: it looks for the pattern's literal first itself, and 18.16 evaluates both
      // sides of an AND on every row (position() beside it doubled the search).
      const test = (e: string) => (bounded ? `match(${e}, ${sqlString(phraseRegex(f.phrase, f.prefix))})` : `position(${e}, ${sqlString(f.phrase)}) > 0`);
      const pieces = t === combinedSql ? onLinePieces(f.phrase, test) : undefined;
      return { sql: pieces ?? test(t), exact: true };
    }
    case "regex": {
      const t = textSql(f.field);
      if (t === undefined) return yes;
      try {
        return { sql: `match(${t}, ${sqlString(clickhouseRegex(f.pattern, f.field))})`, exact: true };
      } catch {
        return yes; // a pattern ClickHouse's RE2 would read otherwise: decided in reqlog
      }
    }
    case "ipv4Range":
      return yes;
  }
}

function numberSql(n: number): string {
  return Number.isInteger(n) ? n.toFixed(0) : String(n);
}

/** The SQL of a group-by field (a bucket of `_time` or a number, with LogsQL's floor), or undefined. */
function bySql(b: ByField): string | undefined {
  const e = fieldSql[b.field];
  if (e === undefined || b.field === "request_id" || b.field === "level" || typeOf(b.field) === "float") return undefined;
  if (b.step === undefined) return e;
  const o = numberSql(b.offset ?? 0);
  return `floor((${e} + ${o}) / ${numberSql(b.step)}) * ${numberSql(b.step)} - ${o}`;
}

/** A stats function in SQL: the aggregate columns it needs, and how to read its value from them. */
function funcSql(f: StatsFunc, i: number): { columns: string[]; value: (row: Record<string, unknown>) => unknown } | undefined {
  const name = (suffix: string) => `f${i}_${suffix}`;
  const fields = f.fields.map((x) => fieldSql[x]);
  if (fields.some((e) => e === undefined) || f.fields.some((x) => x === "request_id" || x === "level" || typeOf(x) === "float")) {
    return undefined;
  }
  const [e] = fields as string[];
  const nonEmpty = (x: string) => (isNumeric(typeOf(x)) ? "1" : `${fieldSql[x]} != ''`);
  switch (f.fn) {
    case "count":
      return f.fields.length === 0
        ? { columns: [`count() AS ${name("n")}`], value: (r) => Number(r[name("n")]) }
        : { columns: [`countIf(${f.fields.map(nonEmpty).join(" OR ")}) AS ${name("n")}`], value: (r) => Number(r[name("n")]) };
    case "count_uniq": {
      const tuple = fields.length === 1 ? e! : `tuple(${fields.join(", ")})`;
      const anyNonEmpty = f.fields.map(nonEmpty).join(" OR ");
      return { columns: [`uniqExactIf(${tuple}, ${anyNonEmpty}) AS ${name("n")}`], value: (r) => Number(r[name("n")]) };
    }
    case "sum":
    case "avg":
      return {
        columns: [`sum(${e}) AS ${name("s")}`, `count() AS ${name("n")}`],
        value: (r) => {
          const n = Number(r[name("n")]);
          const s = Number(r[name("s")]);
          return n === 0 ? null : f.fn === "sum" ? s : s / n;
        },
      };
    case "min":
    case "max":
      return {
        columns: [`${f.fn}(${e}) AS ${name("v")}`, `count() AS ${name("n")}`],
        value: (r) => (Number(r[name("n")]) === 0 ? null : r[name("v")]),
      };
    case "quantile":
    case "median":
      // Nearest rank, as the pipeline: the value at rank ⌈φ·n⌉ (at least 1) of the sorted values.
      return {
        columns: [
          `arrayElement(arraySort(groupArray(${e})), toUInt64(greatest(1, ceil(${numberSql(f.phi!)} * count())))) AS ${name("v")}`,
          `count() AS ${name("n")}`,
        ],
        value: (r) => (Number(r[name("n")]) === 0 ? null : r[name("v")]),
      };
  }
}

/** A value from ClickHouse's JSON (64-bit integers come as text) as a query value of its type. */
export function valueOf(raw: unknown, type: FieldType): string | number | null {
  if (raw === null || raw === undefined) return null;
  if (isNumeric(type)) return typeof raw === "number" ? raw : Number(raw);
  return String(raw);
}

/**
 * Where a query reads each request's latest version, given its conditions:
 * the text after FROM: a subquery of requestsRead (`FINAL WHERE …`, or what needs no FINAL).
 */
export type VersionSource = (conditions: string) => string;

export interface CompiledQuery {
  /** The SQL that answers the filter and pipes before `startAt`. */
  sql: string;
  /** Its rows as the pipe before `startAt` gives them: a value per field name. */
  decode(row: Record<string, unknown>): Map<string, string | number | null>;
  /** The pipes still to run on its rows in reqlog. */
  startAt: number;
  /** The SQL returns groups (stats, top), in no particular order. */
  groups: boolean;
  /** The rows are the newest the budget allows (at most its rows and one): more means a partial answer. */
  scan?: boolean;
}

const latin1ToText = (s: string) => new TextDecoder().decode(Buffer.from(s, "latin1"));

/**
 * The whole query in SQL, when its filter and first pipe have exact SQL:
 * stats and top as GROUP BY, sort … limit and limit as ORDER BY … LIMIT,
 * the rest (no pipe, fields) as the matching rows newest first (at most
 * max-query-rows and one). Undefined when some part must be decided in reqlog.
 */
export function compileQuery(plan: QueryPlan, from: VersionSource, where: string[]): CompiledQuery | undefined {
  const filter = filterSql(plan.query.filter);
  if (!filter.exact) return undefined;
  const conditions = [...where, filter.sql].map((c) => `(${c})`).join(" AND ");
  const pipe: Pipe | undefined = plan.query.pipes[0];
  const newest = "sort_time DESC, rkey DESC";

  if (pipe?.kind === "stats" || pipe?.kind === "top") {
    const by: ByField[] = pipe.kind === "stats" ? pipe.by : pipe.by.map((field) => ({ field }));
    const keys = by.map(bySql);
    if (keys.some((k) => k === undefined)) return undefined;
    const funcs = pipe.kind === "stats" ? pipe.funcs.map(funcSql) : [];
    if (funcs.some((x) => x === undefined)) return undefined;
    const keyColumns = keys.map((k, i) => `${k} AS k${i}`);
    const aggregates = pipe.kind === "stats" ? funcs.flatMap((x) => x!.columns) : ["count() AS hits"];
    const groupBy = keys.length > 0 ? ` GROUP BY ${keys.map((_, i) => `k${i}`).join(", ")}` : "";
    const order = pipe.kind === "top" ? ` ORDER BY hits DESC, ${keys.map((_, i) => `k${i}`).join(", ")} LIMIT ${sqlInt(pipe.n)}` : ` LIMIT ${sqlInt(plan.maxGroups + 1)}`;
    return {
      sql: `SELECT ${[...keyColumns, ...aggregates].join(", ")} FROM ${from(conditions)}${groupBy}${order}`,
      decode(row) {
        const out = new Map<string, string | number | null>(by.map((b, i) => [b.field, valueOf(row[`k${i}`], typeOf(b.field))]));
        if (pipe.kind === "stats") {
          pipe.funcs.forEach((f, i) => {
            const type = f.fn === "count" || f.fn === "count_uniq" ? "int" : f.fn === "avg" ? "float" : typeOf(f.fields[0]!);
            out.set(f.name, valueOf(funcs[i]!.value(row), type));
          });
        } else {
          out.set(pipe.hitsName, Number(row.hits));
        }
        return out;
      },
      startAt: 1,
      groups: true,
    };
  }

  // Rows: the fields the pipes read, newest first (or in a sort's order, cut at its limit).
  const needed = [...requestFieldsRead(plan.query, { kind: "all" })];
  if (needed.some((f) => fieldSql[f] === undefined)) return undefined;
  const select = needed.map((f, i) => `${fieldSql[f]} AS c${i}`).join(", ");
  let order = newest;
  let range: string;
  let startAt = 0;
  let scan = false;
  if (pipe?.kind === "sort" && pipe.limit !== undefined && pipe.by.every((k) => bySql({ field: k.field }) !== undefined)) {
    order = [...pipe.by.map((k) => `${fieldSql[k.field]} ${k.desc ? "DESC" : "ASC"}`), newest].join(", ");
    range = `${sqlInt(pipe.offset ?? 0)}, ${sqlInt(pipe.limit)}`;
    startAt = 1;
  } else if (pipe?.kind === "limit") {
    range = sqlInt(pipe.n);
    startAt = 1;
  } else if (plan.query.pipes.some((p) => p.kind === "stats" || p.kind === "top" || p.kind === "sort")) {
    // A later pipe needs every row: as many as a scan examines, and the answer says when there were more.
    range = sqlInt(plan.budget.rows + 1);
    scan = true;
  } else {
    range = sqlInt(plan.maxRows + 1);
  }
  return {
    sql: `SELECT ${select || "1"} FROM ${from(conditions)} ORDER BY ${order} LIMIT ${range}`,
    decode(row) {
      return new Map(
        needed.map((f, i) => {
          const raw = row[`c${i}`];
          return [f, f === "request_id" ? latin1ToText(String(raw)) : valueOf(raw, typeOf(f))];
        }),
      );
    },
    startAt,
    groups: false,
    scan,
  };
}

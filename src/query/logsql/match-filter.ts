import RE2 from "re2";
import type { Filter } from "./query-ast.js";
import type { FieldType } from "./query-fields.js";
import { compareText, type Row, valueText } from "./query-value.js";
import { ipv4 } from "./query-values.js";

/** Whether a code point is a LogsQL word character (letter, decimal digit, `_`). */
const wordChar = /[\p{L}\p{Nd}_]/u;

function isWordAt(codePoint: number | undefined): boolean {
  return codePoint !== undefined && wordChar.test(String.fromCodePoint(codePoint));
}

/** The code point that ends just before index i (surrogate pairs read whole). */
function codePointBefore(s: string, i: number): number | undefined {
  if (i <= 0) return undefined;
  const low = s.charCodeAt(i - 1);
  if (low >= 0xdc00 && low <= 0xdfff && i >= 2) {
    const high = s.charCodeAt(i - 2);
    if (high >= 0xd800 && high <= 0xdbff) return s.codePointAt(i - 2);
  }
  return low;
}

/**
 * Where `phrase` first occurs in `s` as LogsQL's phrase filter finds it
 * (VictoriaLogs' getPhrasePos): at a position where, if the phrase starts
 * with a word character, none comes right before, and if it ends with one
 * (unless `prefix`), none comes right after. -1 when it does not occur.
 */
export function phrasePosition(s: string, phrase: string, prefix = false): number {
  if (phrase === "") return 0;
  const startsWithWord = isWordAt(phrase.codePointAt(0));
  const endsWithWord = !prefix && isWordAt(codePointBefore(phrase, phrase.length));
  for (let from = 0; ; ) {
    const pos = s.indexOf(phrase, from);
    if (pos < 0) return -1;
    const end = pos + phrase.length;
    if ((startsWithWord && isWordAt(codePointBefore(s, pos))) || (endsWithWord && isWordAt(s.codePointAt(end)))) {
      from = pos + 1;
      continue;
    }
    return pos;
  }
}

/** LogsQL's phrase filter: an empty phrase matches an empty value only; an empty prefix any non-empty value. */
export function matchesPhrase(s: string, phrase: string, prefix: boolean): boolean {
  if (phrase === "") return prefix ? s !== "" : s === "";
  return phrasePosition(s, phrase, prefix) >= 0;
}

const compiled = new Map<string, RE2>();

/** An RE2 pattern compiled with reqlog's flags, cached (plans carry patterns as text). */
export function queryRegex(pattern: string): RE2 {
  let re = compiled.get(pattern);
  if (!re) {
    re = new RE2(pattern, "u");
    if (compiled.size > 500) compiled.clear();
    compiled.set(pattern, re);
  }
  return re;
}

export type Predicate = (row: Row) => boolean;

/**
 * A filter as a function of a row: how every backend decides a filter in
 * JavaScript (SQL only narrows the rows first), so each filter has one
 * meaning. `typeOf` gives each field's type (text forms depend on it).
 */
export function compileFilter(filter: Filter, typeOf: (field: string) => FieldType): Predicate {
  const text = (field: string) => {
    const type = typeOf(field);
    return (row: Row) => valueText(row.get(field), type);
  };
  switch (filter.kind) {
    case "all":
      return () => true;
    case "and": {
      const parts = filter.filters.map((f) => compileFilter(f, typeOf));
      return (row) => parts.every((p) => p(row));
    }
    case "or": {
      const parts = filter.filters.map((f) => compileFilter(f, typeOf));
      return (row) => parts.some((p) => p(row));
    }
    case "not": {
      const inner = compileFilter(filter.filter, typeOf);
      return (row) => !inner(row);
    }
    case "phrase": {
      const get = text(filter.field);
      const { prefix, anyCase } = filter;
      const phrase = anyCase ? filter.phrase.toLowerCase() : filter.phrase;
      return anyCase
        ? (row) => matchesPhrase(get(row).toLowerCase(), phrase, prefix)
        : (row) => matchesPhrase(get(row), phrase, prefix);
    }
    case "exact": {
      const get = text(filter.field);
      const { value } = filter;
      return filter.prefix ? (row) => get(row).startsWith(value) : (row) => get(row) === value;
    }
    case "in": {
      const get = text(filter.field);
      const values = new Set(filter.values);
      return (row) => values.has(get(row));
    }
    case "regex": {
      const get = text(filter.field);
      const re = queryRegex(filter.pattern);
      return (row) => re.test(get(row));
    }
    case "range": {
      const { field, min, max, minInclusive, maxInclusive } = filter;
      return (row) => {
        const v = row.get(field);
        if (typeof v !== "number") return false;
        return (minInclusive ? v >= min : v > min) && (maxInclusive ? v <= max : v < max);
      };
    }
    case "textRange": {
      const get = text(filter.field);
      const { min, max, minInclusive, maxInclusive } = filter;
      return (row) => {
        const v = get(row);
        if (min !== undefined) {
          const c = compareText(v, min);
          if (c < 0 || (c === 0 && !minInclusive)) return false;
        }
        if (max !== undefined) {
          const c = compareText(v, max);
          if (c > 0 || (c === 0 && !maxInclusive)) return false;
        }
        return true;
      };
    }
    case "ipv4Range": {
      const get = text(filter.field);
      const { min, max } = filter;
      return (row) => {
        const n = ipv4(get(row));
        return n !== undefined && n >= min && n <= max;
      };
    }
    case "time":
      return (row) => {
        const v = row.get("_time");
        return typeof v === "number" && v >= filter.min && v <= filter.max;
      };
  }
}

/** The fields a filter reads. */
export function filterFields(filter: Filter, into = new Set<string>()): Set<string> {
  switch (filter.kind) {
    case "all":
      break;
    case "and":
    case "or":
      for (const f of filter.filters) filterFields(f, into);
      break;
    case "not":
      filterFields(filter.filter, into);
      break;
    case "time":
      into.add("_time");
      break;
    default:
      into.add(filter.field);
  }
  return into;
}

import type { FieldType } from "./query-fields.js";
import { formatTime } from "./query-values.js";

/**
 * A field's value in a row: text (text, bool and bytes fields), a number
 * (numbers, durations and times, in µs), or null: empty (no app lines for
 * `level`; a stats result with nothing to add up).
 */
export type Value = string | number | null;

/** A row as filters and pipes read it: a value per field name. */
export interface Row {
  get(field: string): Value;
}

/** A value's text, as word, phrase, exact and regex filters see it (LogsQL matches text). */
export function valueText(value: Value, type: FieldType): string {
  if (value === null) return "";
  if (typeof value === "string") return value;
  if (type === "time") return formatTime(value);
  return numberText(value);
}

/** A number as text: integers in full (no exponent below 2^53), others as JavaScript prints them. */
export function numberText(n: number): string {
  if (Number.isInteger(n) && Math.abs(n) < 2 ** 53) return n.toFixed(0);
  return String(n);
}

/** Compares by code point (UTF-8 byte order, as SQLite and ClickHouse compare text), not by UTF-16 unit. */
export function compareText(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // A surrogate (a code point above U+FFFF) sorts after every other unit.
    const sx = x >= 0xd800 && x <= 0xdfff;
    const sy = y >= 0xd800 && y <= 0xdfff;
    if (sx !== sy) return sx ? 1 : -1;
    return x < y ? -1 : 1;
  }
  return a.length - b.length;
}

/** Orders values of one column: empty first, then numbers by value, text by code point. */
export function compareValues(a: Value, b: Value): number {
  if (a === b) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  if (typeof a === "number" && typeof b === "number") return a < b ? -1 : a > b ? 1 : 0;
  return compareText(String(a), String(b));
}

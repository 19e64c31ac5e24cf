/**
 * Rows in ClickHouse's TabSeparated format, the cheapest it parses (and the
 * cheapest to write here: one string per row, no object per row to
 * serialize). A value is escaped as TabSeparated asks (backslash, tab,
 * newline, carriage return, NUL); a string inside an array is a quoted
 * literal, escaped the same way plus its quote.
 */
const special = /[\\\t\n\r\0]/;
const specials = /[\\\t\n\r\0]/g;
const quotedSpecials = /[\\\t\n\r\0']/g;
const escapes: Record<string, string> = { "\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\0": "\\0", "'": "\\'" };

/** A scalar field. */
export function tsvValue(value: string | number): string {
  if (typeof value === "number") return String(value);
  return special.test(value) ? value.replace(specials, (c) => escapes[c]!) : value;
}

/** An array of numbers (or integers as decimal strings). */
export function tsvNumbers(values: readonly (string | number)[]): string {
  return `[${values.join(",")}]`;
}

const quotedSpecial = /[\\\t\n\r\0']/;

/** An array of strings (one join; a value copied only when it needs escaping, as few do). */
export function tsvStrings(values: readonly string[]): string {
  if (values.length === 0) return "[]";
  let escaped = values;
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (!quotedSpecial.test(v)) continue;
    if (escaped === values) escaped = values.slice();
    (escaped as string[])[i] = v.replace(quotedSpecials, (c) => escapes[c]!);
  }
  return `['${escaped.join("','")}']`;
}

const unescapes: Record<string, string> = { "\\": "\\", t: "\t", n: "\n", r: "\r", "0": "\0", "'": "'", b: "\b", f: "\f" };

/** The fields of a TabSeparated line ClickHouse wrote (scalars only), unescaped. */
export function tsvFields(line: string): string[] {
  const fields = line.split("\t");
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i]!;
    if (field.includes("\\")) fields[i] = field.replace(/\\(.)/gs, (_, c: string) => unescapes[c] ?? c);
  }
  return fields;
}

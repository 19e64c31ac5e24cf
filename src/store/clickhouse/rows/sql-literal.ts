/**
 * Values written into ClickHouse SQL text. @clickhouse/client cannot bind
 * parameters on ClickHouse 18.16 (no server-side query_params), so every
 * value a query carries is an escaped literal made here, and only here.
 */

/** A string literal: backslash and quote escaped, control characters as \xHH. */
export function sqlString(value: string): string {
  return `'${value.replace(/[\\'\x00-\x1f\x7f]/g, (c) =>
    c === "\\" || c === "'" ? `\\${c}` : `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`,
  )}'`;
}

/** An integer literal (bigints print exactly). */
export function sqlInt(value: bigint | number): string {
  if (typeof value === "number" && !Number.isSafeInteger(value)) throw new Error(`cannot write ${value} as an SQL integer`);
  return String(value);
}

/** A list of literals for IN (…); never empty (an empty IN is a syntax error). */
export function sqlList(values: readonly string[]): string {
  return values.length > 0 ? `(${values.join(", ")})` : "(NULL)";
}

/**
 * Bytes as ClickHouse keeps them in a String column: each byte one
 * character U+0000…U+00FF (latin1), which JSON and SQL text carry as UTF-8.
 * Any byte sequence goes through JSON unchanged this way, and a literal made
 * with sqlString of the same text matches the stored value.
 */
export function bytesToText(bytes: Uint8Array): string {
  // A short id (most are) without a Buffer made for it: half the time, the same text.
  if (bytes.length <= 64) return String.fromCharCode.apply(null, bytes as unknown as number[]);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1");
}

/** The bytes a bytesToText text stands for. */
export function textToBytes(text: string): Uint8Array {
  return new Uint8Array(Buffer.from(text, "latin1"));
}

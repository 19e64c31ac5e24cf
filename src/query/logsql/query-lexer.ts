import { type Position, queryError } from "./query-error.js";

export type { Position };

export interface Token {
  /** The token's text, unquoted. "" at the end of the query. */
  text: string;
  /** The token as written (with its quotes). */
  raw: string;
  quoted: boolean;
  /** Whitespace or a comment came before it. */
  spaceBefore: boolean;
  at: Position;
}

/** LogsQL's word characters: letters, decimal digits and `_` (VictoriaLogs' isTokenRune). */
export const isWordChar = (c: string) => /^[\p{L}\p{Nd}_]$/u.test(c);

const simpleEscapes: Record<string, string> = { a: "\x07", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t", v: "\v", "\\": "\\" };

/**
 * Splits a query into LogsQL's tokens, as VictoriaLogs' lexer does: runs of
 * word characters and dots (`10.0.0.1`, `1.5s`, `_time`), quoted strings
 * (`"…"` and `'…'` with Go's escapes, `` `…` `` raw), `!=`, `!~`, `=~`, and
 * any other character alone. `#` starts a comment to the end of the line.
 */
export function tokenize(query: string): Token[] {
  const chars = Array.from(query);
  const tokens: Token[] = [];
  let i = 0;
  let line = 1;
  let lineStart = 0;
  const at = (index: number): Position => ({ line, column: index - lineStart + 1 });
  const advanceLines = (from: number, to: number) => {
    for (let k = from; k < to; k++) {
      if (chars[k] === "\n") {
        line++;
        lineStart = k + 1;
      }
    }
  };

  for (;;) {
    let spaceBefore = false;
    for (;;) {
      const c = chars[i];
      if (c !== undefined && /\s/u.test(c)) {
        advanceLines(i, i + 1);
        i++;
        spaceBefore = true;
      } else if (c === "#") {
        while (i < chars.length && chars[i] !== "\n") i++;
        spaceBefore = true;
      } else break;
    }
    const start = i;
    const pos = at(start);
    if (i >= chars.length) {
      tokens.push({ text: "", raw: "", quoted: false, spaceBefore, at: pos });
      return tokens;
    }
    const c = chars[i]!;
    let text: string;
    let quoted = false;
    if (isWordChar(c) || c === ".") {
      while (i < chars.length && (isWordChar(chars[i]!) || chars[i] === ".")) i++;
      text = chars.slice(start, i).join("");
    } else if (c === '"' || c === "'") {
      const r = unquote(chars, i, c, pos);
      text = r.text;
      i = r.end;
      quoted = true;
    } else if (c === "`") {
      const close = chars.indexOf("`", i + 1);
      if (close < 0) throw queryError(pos, "a string opened with ` is not closed");
      text = chars.slice(i + 1, close).join("");
      i = close + 1;
      quoted = true;
    } else if ((c === "!" && (chars[i + 1] === "=" || chars[i + 1] === "~")) || (c === "=" && chars[i + 1] === "~")) {
      text = c + chars[i + 1]!;
      i += 2;
    } else {
      text = c;
      i++;
    }
    const raw = chars.slice(start, i).join("");
    advanceLines(start, i);
    tokens.push({ text, raw, quoted, spaceBefore, at: pos });
  }
}

/** A quoted string from `open` (a `"` or `'`) with Go's escapes; returns its text and the index after it. */
function unquote(chars: string[], open: number, quote: string, pos: Position): { text: string; end: number } {
  let out = "";
  let i = open + 1;
  for (;;) {
    const c = chars[i];
    if (c === undefined || (c === "\n" && quote === '"')) throw queryError(pos, `a string opened with ${quote} is not closed`);
    if (c === quote) return { text: out, end: i + 1 };
    if (c !== "\\") {
      out += c;
      i++;
      continue;
    }
    const e = chars[i + 1];
    if (e === undefined) throw queryError(pos, `a string opened with ${quote} is not closed`);
    if (e in simpleEscapes) {
      out += simpleEscapes[e];
      i += 2;
    } else if (e === '"' || e === "'") {
      out += e;
      i += 2;
    } else if (e === "x" || e === "u" || e === "U") {
      const n = e === "x" ? 2 : e === "u" ? 4 : 8;
      const hex = chars.slice(i + 2, i + 2 + n).join("");
      if (!new RegExp(`^[0-9a-fA-F]{${n}}$`).test(hex)) throw queryError(pos, `bad escape \\${e}${hex} in a quoted string`);
      out += String.fromCodePoint(parseInt(hex, 16));
      i += 2 + n;
    } else if (/[0-7]/.test(e)) {
      const oct = chars.slice(i + 1, i + 4).join("");
      if (!/^[0-7]{3}$/.test(oct)) throw queryError(pos, `bad escape \\${oct} in a quoted string`);
      out += String.fromCharCode(parseInt(oct, 8));
      i += 4;
    } else {
      throw queryError(pos, `unknown escape \\${e} in a quoted string`);
    }
  }
}

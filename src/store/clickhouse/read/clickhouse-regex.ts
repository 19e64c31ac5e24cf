import { ReqlogError } from "../../../reqlog-error.js";

/**
 * A Read pattern as ClickHouse's match() must be given it to match exactly
 * what the re2 package matches (the reference: src/query/read-plan.ts
 * compiles patterns with it, flags "u"). Both are RE2; what differs, as
 * measured against ClickHouse 18.16 (test/store-contract/clickhouse.contract.test.ts):
 *
 * - JavaScript syntax the re2 package translates before RE2 sees it:
 *   `\uXXXX`, `\u{…}`, `\cX` and `(?<name>…)`. Translated here the same way.
 * - match() lets `.` match a newline (RE2's dot_nl); the re2 package does
 *   not. The pattern is wrapped in `(?-s:…)`.
 * - match() first looks for a literal it reads off the top level of the
 *   pattern, folding case only for ASCII: `(?i)ა` then misses `Ა`. Inside
 *   the wrapping group it finds no literal, and RE2 alone decides.
 * - Unicode classes (`\p…`, `\P…`) come from each side's own RE2 build and
 *   Unicode version; such patterns are refused rather than answered
 *   differently. So is a NUL character, which match() cannot take.
 */
export function clickhouseRegex(pattern: string, field: string): string {
  const refuse = (what: string) =>
    ReqlogError.invalid(`${field} uses ${what}, which the ClickHouse store cannot match as RE2 does here: leave it out`);
  let out = "";
  for (let i = 0; i < pattern.length; ) {
    const c = pattern[i]!;
    if (c === "\0") throw refuse("a NUL character");
    if (c === "\\" && i + 1 < pattern.length) {
      const next = pattern.codePointAt(i + 1)!;
      const escaped = String.fromCodePoint(next);
      if (escaped === "p" || escaped === "P") throw refuse(`a Unicode class (\\${escaped})`);
      if (escaped === "\0") throw refuse("a NUL character");
      if (escaped === "c" && /[A-Z]/.test(pattern[i + 2] ?? "")) {
        out += `\\x${(pattern.charCodeAt(i + 2) - 64).toString(16).padStart(2, "0")}`;
        i += 3;
        continue;
      }
      if (escaped === "u") {
        const hex = /^[0-9A-Fa-f]{1,4}/.exec(pattern.slice(i + 2));
        if (hex) {
          out += `\\x{${hex[0]}}`;
          i += 2 + hex[0].length;
          continue;
        }
        if (pattern[i + 2] === "{") {
          out += "\\x";
          i += 2;
          continue;
        }
      }
      out += `\\${escaped}`;
      i += 1 + escaped.length;
      continue;
    }
    if (pattern.startsWith("(?<", i) && pattern[i + 3] !== "=" && pattern[i + 3] !== "!") {
      out += "(?P<";
      i += 3;
      continue;
    }
    out += c;
    i++;
  }
  return `(?-s:${out})`;
}

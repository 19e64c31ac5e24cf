import fc from "fast-check";
import RE2 from "re2";
import { describe, expect, it } from "vitest";
import { createRandom } from "../../bench/forge-traffic.js";
import { re2Flags } from "../../src/query/read-plan.js";
import { foldOrbit, parseRe2 } from "../../src/query/re2-syntax.js";
import { requiredStrings, satisfies, type StringQuery } from "../../src/query/required-strings.js";

type Random = ReturnType<typeof createRandom>;

/** A case-folded variant of a character, as (?i) lets it match. */
function folded(r: Random, c: string): string {
  const orbit = foldOrbit(c.codePointAt(0)!);
  return orbit ? String.fromCodePoint(r.pick(orbit)) : c;
}

const letters = ["a", "b", "c", "k", "s", "G", "E", "T", "K", "S", "0", "5", "/", ":", "é", "_", "'", " ", '"', "😀", "𝄞", "ſ", "\u212a"];
const escapable = [".", "-", " ", '"', "[", "]", "/", "(", ")", "+", "{", "}", "\\", "|", "?", "*", "^", "$"];

/**
 * A random pattern in the dialect reqlog accepts, and a string it matches,
 * built together (RE2 confirms each). `fold` is whether (?i) is in force.
 */
function patternAndMatch(r: Random, depth = 0, fold = false): { pattern: string; match: string } {
  const atom = (): { pattern: string; match: string } => {
    switch (r.int(depth < 2 ? 16 : 11)) {
      case 0: {
        const c = r.pick(escapable);
        return { pattern: `\\${c}`, match: c };
      }
      case 1:
        return r.pick([
          { pattern: "[a-c]", match: r.pick(["a", "b", "c"]) },
          { pattern: "[^/]", match: r.pick(["x", "é", " "]) },
          { pattern: "[k-m0-2]", match: r.pick(["k", "l", "1"]) },
          { pattern: "[[:alpha:]]", match: r.pick(["q", "Z"]) },
          { pattern: "[\\d\\-]", match: r.pick(["7", "-"]) },
          { pattern: "[]a]", match: r.pick(["]", "a"]) },
          { pattern: "[\\x{41}\\u0042]", match: r.pick(["A", "B"]) },
        ]).valueOf() as { pattern: string; match: string };
      case 2:
        return { pattern: ".", match: r.pick(["x", " ", "é", "😀"]) };
      case 3:
        return r.pick([
          { pattern: "\\d", match: String(r.int(10)) },
          { pattern: "\\w", match: r.pick(["a", "Z", "_", "4"]) },
          { pattern: "\\s", match: " " },
          { pattern: "\\x41", match: "A" },
          { pattern: "\\x{263a}", match: "☺" },
          { pattern: "\\u00e9", match: "é" },
          { pattern: "\\u{1F600}", match: "😀" },
          { pattern: "\\pL", match: "λ" },
          { pattern: "\\p{Greek}", match: "λ" },
          { pattern: "\\t", match: "\t" },
          { pattern: "\\cJ", match: "\n" },
          { pattern: "\\Qa.b\\E", match: "a.b" },
        ]);
      case 4:
      case 5:
      case 6:
      case 7:
      case 8: {
        const c = r.pick(letters);
        return { pattern: c, match: fold ? folded(r, c) : c };
      }
      case 9:
        return { pattern: "{", match: "{" };
      case 10: {
        const c = r.pick(["a", "k", "S", "x"]);
        return { pattern: `(?i:${c})`, match: folded(r, c) };
      }
      default: {
        const inner = r.int(6);
        if (inner === 0) {
          const sub = patternAndMatch(r, depth + 1, true);
          return { pattern: `(?i:${sub.pattern})`, match: sub.match };
        }
        const branches = Array.from({ length: 1 + r.int(3) }, () => patternAndMatch(r, depth + 1, fold));
        const chosen = r.pick(branches);
        const open = r.pick(["(", "(?:", `(?P<n${r.int(1e9)}>`, `(?<m${r.int(1e9)}>`]);
        return { pattern: `${open}${branches.map((b) => b.pattern).join("|")})`, match: chosen.match };
      }
    }
  };
  let pattern = "";
  let match = "";
  if (depth === 0 && r.int(6) === 0) {
    pattern = "(?i)";
    fold = true;
  }
  const length = 1 + r.int(8);
  for (let i = 0; i < length; i++) {
    const a = atom();
    const q = r.int(14);
    const times = (n: number) => a.match.repeat(n);
    if (q === 0) [pattern, match] = [pattern + `(?:${a.pattern})?`, match + times(r.int(2))];
    else if (q === 1) [pattern, match] = [pattern + `(?:${a.pattern})*`, match + times(r.int(3))];
    else if (q === 2) [pattern, match] = [pattern + `(?:${a.pattern})+?`, match + times(1 + r.int(2))];
    else if (q === 3) [pattern, match] = [pattern + `(?:${a.pattern}){0,2}`, match + times(r.int(3))];
    else if (q === 4) [pattern, match] = [pattern + `(?:${a.pattern}){2}`, match + times(2)];
    else if (q === 5) [pattern, match] = [pattern + `(?:${a.pattern}){1,}`, match + times(1 + r.int(2))];
    else [pattern, match] = [pattern + a.pattern, match + a.match];
  }
  if (depth === 0 && r.int(8) === 0) pattern = `${pattern}|zzz`;
  return { pattern, match };
}

const show = (q: StringQuery): string =>
  q.op === "has" ? JSON.stringify(q.s) : q.op === "and" || q.op === "or" ? `(${q.args.map(show).join(` ${q.op} `)})` : q.op;

describe("strings a pattern requires", () => {
  // Mutation-checked: each of these fails this property (seeds in the commit
  // log): a folded k without the Kelvin sign, a negated class read as its
  // members, x+ kept exact as x, an exact string's prefix cut from its end.
  it("are in every text the pattern matches in", () => {
    let understood = 0;
    let required = 0;
    fc.assert(
      fc.property(fc.integer(), fc.string({ maxLength: 4 }), fc.string({ maxLength: 4 }), (seed, before, after) => {
        const { pattern, match } = patternAndMatch(createRandom(seed));
        const re = new RE2(pattern, re2Flags);
        const text = before + match + after;
        expect(re.test(text), `${pattern} should match ${JSON.stringify(match)}`).toBe(true);
        const query = requiredStrings(pattern);
        if (parseRe2(pattern)) understood++;
        if (query.op !== "all") required++;
        expect(satisfies(query, text), `${pattern} in ${JSON.stringify(text)}: ${show(query)}`).toBe(true);
      }),
      { numRuns: 5000 },
    );
    // The property says something only if most patterns are understood and many require something.
    expect(understood).toBeGreaterThan(4500);
    expect(required).toBeGreaterThan(1000);
  });

  it("follow literals, classes, alternation, repetition and case folding", () => {
    const q = (p: string) => show(requiredStrings(p));
    expect(q('"GET /api/v1/repos/[^/]+/[^/]+/raw/go\\.mod HTTP/2\\.0" 500 ')).toBe(
      '("\\"GET /api/v1/repos/" and "/raw/go.mod HTTP/2.0\\" 500 ")',
    );
    expect(q("abc(def|ghi)jkl")).toBe('("abcdefjkl" or "abcghijkl")');
    expect(q("ab(cd)?ef")).toBe('("abcdef" or "abef")');
    expect(q("(foo|bar)+baz")).toBe('(("foo" or "bar") and ("oobaz" or "arbaz"))');
    expect(q("x[0-9]+\\.zip")).toBe('".zip"');
    expect(q("artifacts/\\d{5}/zip")).toBe('("artifacts/" and "/zip")');
    expect(q("abcdef|ghijkl")).toBe('("abcdef" or "ghijkl")');
    expect(q("(?i)abc")).toBe(
      '("abc" or "abC" or "aBc" or "aBC" or "Abc" or "AbC" or "ABc" or "ABC")',
    );
    // Nothing certain: too short, any character, a star, an alternative that requires nothing.
    for (const p of ["ab", ".", "a.c", "(abc)*", "abc|d", "(?i)zq", ""]) expect(q(p), p).toBe("all");
    // Not understood, so nothing is claimed: octal escapes, \C.
    for (const p of ["abc\\101def", "abc\\Cdef"]) expect(q(p), p).toBe("all");
  });

  it("fold ASCII letters exactly as RE2 does, the Kelvin sign and the long s included", () => {
    // Every code point, one a line, searched once per letter as bytes.
    const all: string[] = [];
    for (let cp = 0; cp <= 0x10ffff; cp++) if (cp < 0xd800 || cp > 0xdfff) all.push(String.fromCodePoint(cp));
    const text = Buffer.from(all.join("\n"));
    for (let letter = 0x61; letter <= 0x7a; letter++) {
      const re = new RE2(`(?i:${String.fromCodePoint(letter)})`, `g${re2Flags}`);
      const matched = (re.match(text) as unknown as Buffer[]).map((b) => b.toString().codePointAt(0)!);
      expect([...new Set(matched)].sort((a, b) => a - b)).toEqual([...foldOrbit(letter)!].sort((a, b) => a - b));
    }
  });
});

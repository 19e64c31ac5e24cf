import fc from "fast-check";
import RE2 from "re2";
import { describe, expect, it } from "vitest";
import { createRandom } from "../../bench/forge-traffic.js";
import { formatCombined } from "../../src/format/combined-line.js";
import { requiredLiterals } from "../../src/query/regex-literals.js";
import { mayBeInTimeOrFixed } from "../../src/query/line-pieces.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { useTestServer } from "../helpers/test-server.js";

type Random = ReturnType<typeof createRandom>;

/** A random RE2 pattern and a string it matches, built together. */
function patternAndMatch(r: Random, depth = 0): { pattern: string; match: string } {
  const atom = (): { pattern: string; match: string } => {
    switch (r.int(depth < 2 ? 9 : 6)) {
      case 0: {
        const c = r.pick([".", "-", " ", '"', "[", "]", "/", "(", "+", "{", "\\"]);
        return { pattern: `\\${c}`, match: c };
      }
      case 1:
        return { pattern: "[a-c]", match: r.pick(["a", "b", "c"]) };
      case 2:
        return { pattern: ".", match: r.pick(["x", " ", "é"]) };
      case 3:
        return r.pick([
          { pattern: "\\d", match: String(r.int(10)) },
          { pattern: "\\x41", match: "A" },
          { pattern: "\\u00e9", match: "é" },
        ]);
      case 4:
      case 5:
        return (() => {
          const c = r.pick(["a", "b", "c", "G", "E", "T", "0", "5", "/", ":", "é", "_", "'", "😀", "𝄞"]);
          return { pattern: c, match: c };
        })();
      default: {
        const branches = Array.from({ length: 1 + r.int(2) }, () => patternAndMatch(r, depth + 1));
        const chosen = r.pick(branches);
        return { pattern: `(${r.pick(["", "?:"])}${branches.map((b) => b.pattern).join("|")})`, match: chosen.match };
      }
    }
  };
  let pattern = "";
  let match = "";
  const length = 1 + r.int(8);
  for (let i = 0; i < length; i++) {
    const a = atom();
    const q = r.int(10);
    const times = (n: number) => a.match.repeat(n);
    if (q === 0) [pattern, match] = [pattern + `${a.pattern}?`, match + times(r.int(2))];
    else if (q === 1) [pattern, match] = [pattern + `${a.pattern}*`, match + times(r.int(3))];
    else if (q === 2) [pattern, match] = [pattern + `${a.pattern}+`, match + times(1 + r.int(2))];
    else if (q === 3) [pattern, match] = [pattern + `${a.pattern}{0,2}`, match + times(r.int(3))];
    else if (q === 4) [pattern, match] = [pattern + `${a.pattern}{2}`, match + times(2)];
    else [pattern, match] = [pattern + a.pattern, match + a.match];
  }
  // Now and then an alternation at the top, which leaves nothing required.
  if (depth === 0 && r.int(8) === 0) pattern = `${pattern}|zzz`;
  return { pattern, match };
}

describe("required literals of a pattern", () => {
  it("occur in every string the pattern matches", () => {
    fc.assert(
      fc.property(fc.integer(), fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), (seed, before, after) => {
        const { pattern, match } = patternAndMatch(createRandom(seed));
        const re = new RE2(pattern, "u");
        const line = before + match + after;
        expect(re.test(line)).toBe(true);
        for (const literal of requiredLiterals(re.source)) expect(line).toContain(literal);
      }),
      { numRuns: 3000 },
    );
  });

  it("are the plain runs of the top-level sequence", () => {
    expect(requiredLiterals('"GET /api/v1/repos/[^/]+/[^/]+/raw/go\\.mod HTTP/2\\.0" 500 ')).toEqual([
      '"GET /api/v1/repos/',
      "/raw/go.mod HTTP/2.0\" 500 ",
    ]);
    expect(requiredLiterals("abcd?efg")).toEqual(["abc", "efg"]);
    expect(requiredLiterals("x(abc)+yzw")).toEqual(["yzw"]);
    expect(requiredLiterals("ab\\d{2}cdef")).toEqual(["cdef"]);
    // Nothing certain: alternation at the top, flags.
    expect(requiredLiterals("abcdef|ghijkl")).toEqual([]);
    expect(requiredLiterals("(?i)stars are disabled")).toEqual([]);
    // A quantifier after a character outside the BMP applies to the whole character.
    expect(requiredLiterals("ab😀?")).toEqual([]);
    expect(requiredLiterals("abc😀*de")).toEqual(["abc"]);
    expect(requiredLiterals("x😀yz")).toEqual(["x😀yz"]);
  });

  it("tell pieces that may lie in the time or the fixed parts (which the index cannot be asked for)", () => {
    // "Nov" and "2026:10" fit in `21/Nov/2026:10:00:00 +0000`; "+0000" and "-" are fixed.
    for (const piece of ["Nov/2026:10", "+0000", "000", "-", "ov/20", "26:1"]) expect(mayBeInTimeOrFixed(piece), piece).toBe(true);
    for (const piece of ["go.mod", "Stars", "2026x", "12345", "it's"]) expect(mayBeInTimeOrFixed(piece), piece).toBe(false);
  });
});

// Field text from a few pieces, so patterns made of the same pieces match now and then;
// quotes, backslashes and tabs make some lines stored rather than derived.
const piece = fc.constantFrom("go.mod", "/raw/", "ci-bot", "Mozilla/5.0", " ", "[x]", '"q"', "a\\b", "\t", "é", "500", "Nov", "-", "😀");
const text = fc.array(piece, { maxLength: 4 }).map((ps) => ps.join(""));
const patternPiece = fc.constantFrom("go\\.mod", "/raw/", "ci-bot", "Mozilla/5\\.0", " ", "\\[x\\]", '"q"', "a\\\\b", "é", "500", "Nov", "-", ".*", "\\d+", "[a-z]+", "(go|ci)", '" 500 ', "GET ", "😀?", "😀+");
let app = 0;

describe("a Read with a regex, prefiltered", () => {
  const ts = useTestServer();

  it("returns exactly the records whose combined line RE2 matches", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            ip: text,
            nickname: fc.option(text, { nil: undefined }),
            resource: text.filter((s) => s !== ""),
            status: fc.constantFrom(200, 302, 500),
            referrer: fc.option(text, { nil: undefined }),
            userAgent: fc.option(text, { nil: undefined }),
            combined: fc.option(text, { nil: undefined }),
          }),
          { minLength: 1, maxLength: 12 },
        ),
        fc.array(patternPiece, { minLength: 1, maxLength: 4 }).map((ps) => ps.join("")),
        async (records, pattern) => {
          const appId = `prefilter-${app++}`;
          const logs = records.map((fields, i) =>
            minimalLog({ appId, requestId: rid(`p${i}`), ...fields, startTime: t0 + BigInt(i) * 1000n, endTime: t0 + BigInt(i) * 1000n + 500n }),
          );
          await ts.write(...logs);
          const re = new RE2(pattern, "u");
          const expected = logs
            .filter((log) => re.test(Buffer.from(log.combined || formatCombined(log))))
            .map((log) => new TextDecoder().decode(log.requestId))
            .sort();
          const read = await ts.read({ appId, count: 1000n, combinedLogRegex: pattern });
          expect(read.log.map((l) => new TextDecoder().decode(l.requestId)).sort()).toEqual(expected);
        },
      ),
      { numRuns: 200 },
    );
  });
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { entryToken, type SearchDocColumns, searchDoc } from "../../src/store/sqlite/rows/search-doc.js";
import type { StopGrams } from "../../src/store/sqlite/rows/stop-grams.js";
import { ipFromSql, ipToSql } from "../../src/store/sqlite/rows/stored-record.js";
import { addTrigrams, distinctGrams, type Gram, gramOf, gramToken } from "../../src/store/sqlite/rows/trigram.js";

/** A document's tokens as searchDoc made them with one Set of grams and a string joined per token (the model). */
function modelTokens(row: SearchDocColumns, stop: StopGrams): string {
  const grams = new Set<Gram>();
  if (row.combined !== null) {
    addTrigrams(row.combined, grams);
  } else {
    addTrigrams(ipFromSql(row.ip), grams);
    if (row.nickname !== null) addTrigrams(row.nickname, grams);
    addTrigrams(row.resource, grams);
  }
  const tokens = [...grams].filter((gram) => !stop.stopped(gram, row.id)).map(gramToken);
  if (row.combined === null) {
    if (row.referrer_key !== null) tokens.push(entryToken(row.referrer_key));
    if (row.user_agent_key !== null) tokens.push(entryToken(row.user_agent_key));
  }
  return tokens.join(" ");
}

// Pieces that share grams, non-ASCII letters, an emoji (a surrogate pair), a lone surrogate, and short texts.
const piece = fc.constantFrom("/api/v1/", "alice", "ali", "ce/", "go.mod", "é", "😀", "\ud800", "ab", "a", "", " ", "12345", "/ap");
const text = fc.array(piece, { maxLength: 6 }).map((ps) => ps.join(""));
const key = fc.option(fc.oneof(fc.nat(1 << 20), fc.bigInt({ min: 0n, max: (1n << 62n) })), { nil: null });
const row = fc.record({
  id: fc.bigInt({ min: 1n, max: 100n }),
  ip: fc.oneof(fc.constantFrom("10.0.0.1", "::1", "", "2001:db8::5", "é.0.0.1").map(ipToSql), text),
  nickname: fc.option(text, { nil: null }),
  resource: text,
  combined: fc.option(text, { nil: null }),
  referrer_key: key,
  user_agent_key: key,
});
/** Stop grams: some of the pieces' grams, each from a row id on. */
const stops = fc.array(fc.tuple(fc.constantFrom("/ap", "ali", "lic", "go.", "😀ab", "éab", "pi/", "a/a"), fc.bigInt({ min: 1n, max: 100n })), { maxLength: 4 });
const stopGramsOf = (list: [string, bigint][]): StopGrams => {
  const since = new Map(list.map(([gram, from]) => [gramOf(gram), from]));
  return { stopped: (gram, id) => since.has(gram) && id >= since.get(gram)!, any: (gram) => since.has(gramOf(gram)) };
};

describe("search documents", () => {
  it("have the tokens of the document's distinct grams in the order they first occur, then its entries", () => {
    fc.assert(
      fc.property(fc.array(row, { minLength: 1, maxLength: 5 }), stops, (rows, stopList) => {
        const stop = stopGramsOf(stopList);
        // Several documents in a row: what one leaves behind must not change the next.
        for (const r of rows) expect(searchDoc(r, stop).tokens).toBe(modelTokens(r, stop));
      }),
      { numRuns: 2000 },
    );
  });

  // The answer's array is reused: kept at the largest document's size, a 16 MB resource of CJK text held
  // millions of stale grams (a string each) for as long as the process ran.
  it("keep nothing of a document with many distinct grams once a small one follows", () => {
    let x = 1;
    const big = Array.from({ length: 200_000 }, () => String.fromCodePoint(0x4e00 + ((x = (x * 48_271) % 2_147_483_647) % 20_000))).join("");
    expect(distinctGrams([big]).count).toBeGreaterThan(100_000);
    const small = distinctGrams(["/api/v1/repos/alice"]);
    expect(small.count).toBe(17);
    expect(small.grams.length).toBeLessThanOrEqual(1 << 14);
  });

  it("stay the same past the 65,535 documents after which the seen grams' table starts again", () => {
    const stop = stopGramsOf([]);
    const rows: SearchDocColumns[] = [
      { id: 1n, ip: ipToSql("10.0.0.1"), nickname: null, resource: "/api/v1/repos/alice", combined: null, referrer_key: 3, user_agent_key: null },
      { id: 2n, ip: "::1", nickname: "bob", resource: "/api/v1/repos/alice/é", combined: null, referrer_key: null, user_agent_key: 9n },
    ];
    const expected = rows.map((r) => modelTokens(r, stop));
    for (let i = 0; i < 70_000; i++) {
      const at = i % 2;
      const tokens = searchDoc(rows[at]!, stop).tokens;
      if (tokens !== expected[at]) expect(tokens, `document ${i}`).toBe(expected[at]);
    }
  });
});

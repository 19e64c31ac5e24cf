import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { AppLine } from "../../src/domain/records.js";
import { decodeLines, mergeLines } from "../../src/store/sqlite/rows/line-blob.js";

const line: fc.Arbitrary<AppLine> = fc.record({
  // Times near each other (deltas of a byte or two), far apart, and past 2^53.
  time: fc.oneof(
    fc.bigInt({ min: 1_795_000_000_000_000n, max: 1_795_000_000_001_000n }),
    fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }),
  ),
  pos: fc.nat(40),
  level: fc.nat(4),
  message: fc.oneof(fc.constantFrom("", "tick", "tock", "é😀", "a/b/c"), fc.string({ unit: "grapheme", maxLength: 30 })),
});

const key = (l: AppLine) => `${l.time}/${l.pos}/${l.level}/${l.message}`;
/** The model's order: time, position, level, then the message's UTF-8 bytes. */
const order = (a: AppLine, b: AppLine) =>
  a.time !== b.time ? (a.time < b.time ? -1 : 1) : a.pos - b.pos || a.level - b.level || Buffer.compare(Buffer.from(a.message), Buffer.from(b.message));

describe("a request's lines as one blob", () => {
  // Mutation-checked: fails when lines are not sorted, when a line sent
  // again is stored again, and when time deltas past 2^53 are read as numbers.
  it("holds every distinct line sent, once, in Read's order, whatever the flushes", () => {
    // Flushes drawn from a few lines: retried and overlapping flushes send lines again.
    const flushesArb = fc
      .array(line, { minLength: 1, maxLength: 8 })
      .chain((pool) => fc.array(fc.array(fc.constantFrom(...pool), { maxLength: 6 }), { minLength: 1, maxLength: 6 }));
    fc.assert(
      fc.property(flushesArb, (flushes) => {
        let blob: Buffer | null = null;
        const model = new Map<string, AppLine>();
        for (const flush of flushes) {
          const merged = mergeLines(blob, flush);
          const fresh = flush.filter((l, i) => !model.has(key(l)) && flush.findIndex((m) => key(m) === key(l)) === i);
          expect(merged.added.map(key)).toEqual(fresh.map(key));
          for (const l of fresh) model.set(key(l), l);
          blob = merged.blob;
        }
        expect(decodeLines(blob).map(key)).toEqual([...model.values()].sort(order).map(key));
      }),
      { numRuns: 2000 },
    );
  });

  it("is empty (NULL in the row) until a line comes", () => {
    expect(mergeLines(null, [])).toEqual({ blob: null, added: [] });
    expect(decodeLines(null)).toEqual([]);
  });
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { addToTopNames, emptyTopNames, topNamesCapacity, topNamesOf, type TopNames } from "../../src/domain/top-names.js";
import { decodeTopNames, encodeTopNames } from "../../src/store/sqlite/rows/top-names-blob.js";

/**
 * Writes to a few periods, as the rollups make them: a batch of requests
 * per name (some of them errors), or some of a name's requests taken out
 * again (never more than it has, and never leaving it more errors than
 * requests: the rollups take out only what they put in).
 */
const op = (names: number) =>
  fc.record({
    period: fc.nat(2),
    name: fc.nat(names - 1),
    add: fc.boolean(),
    requests: fc.integer({ min: 1, max: 20 }),
    errors: fc.nat(20),
  });

interface Exact {
  requests: number;
  errors: number;
}

/** Runs the ops on one summary per period and on exact counts; returns both. */
function run(ops: { period: number; name: number; add: boolean; requests: number; errors: number }[]) {
  const summaries: TopNames[] = [emptyTopNames(), emptyTopNames(), emptyTopNames()];
  const exact = [new Map<string, Exact>(), new Map<string, Exact>(), new Map<string, Exact>()];
  for (const o of ops) {
    const name = `10.0.${o.name >> 8}.${o.name & 255}`;
    const counts = exact[o.period]!;
    const e = counts.get(name) ?? { requests: 0, errors: 0 };
    const requests = o.add ? o.requests : -Math.min(o.requests, e.requests);
    // (A request taken out takes its error with it: a name never keeps more errors than requests.)
    const errors = o.add
      ? Math.min(o.errors, o.requests)
      : -Math.max(Math.min(o.errors, e.errors, -requests), e.errors - (e.requests + requests));
    if (requests === 0 && errors === 0) continue;
    e.requests += requests;
    e.errors += errors;
    counts.set(name, e);
    addToTopNames(summaries[o.period]!, name, requests, errors);
    // Round trips through the column value as the rollups store it.
    summaries[o.period] = decodeTopNames(encodeTopNames(summaries[o.period]!));
  }
  const total = new Map<string, Exact>();
  for (const counts of exact) {
    for (const [name, e] of counts) {
      const t = total.get(name) ?? { requests: 0, errors: 0 };
      t.requests += e.requests;
      t.errors += e.errors;
      total.set(name, t);
    }
  }
  return { summaries, total };
}

describe("top names (Space-Saving with removals)", () => {
  it("counts exactly while a period has at most the capacity of distinct names (property)", () => {
    fc.assert(
      fc.property(fc.array(op(topNamesCapacity), { maxLength: 600 }), (ops) => {
        const { summaries, total } = run(ops);
        for (const s of summaries) expect(s.floor).toBe(0);
        const expected = [...total]
          .filter(([, e]) => e.requests > 0)
          .map(([name, e]) => ({ name, requests: e.requests, errors: e.errors, maxError: 0 }))
          .sort((a, b) => b.requests - a.requests || (a.name < b.name ? -1 : 1));
        expect(topNamesOf(summaries, 1000)).toEqual(expected);
      }),
      { numRuns: 200 },
    );
  });

  it("keeps every count within its max_error of the exact one, errors at most the exact, and leaves out only names of at most the floors (property)", () => {
    fc.assert(
      fc.property(fc.array(op(3 * topNamesCapacity), { maxLength: 1500 }), (ops) => {
        const { summaries, total } = run(ops);
        const listed = topNamesOf(summaries, 1000);
        for (const t of listed) {
          const e = total.get(t.name)!;
          expect(Math.abs(t.requests - e.requests)).toBeLessThanOrEqual(t.maxError);
          expect(t.errors).toBeLessThanOrEqual(e.errors);
        }
        for (const s of summaries) expect(s.entries.size).toBeLessThanOrEqual(topNamesCapacity);
        // A name in no summary made at most the floors' sum of requests.
        const floors = summaries.reduce((sum, s) => sum + s.floor, 0);
        const names = new Set(listed.map((t) => t.name));
        for (const [name, e] of total) if (!names.has(name)) expect(e.requests).toBeLessThanOrEqual(floors);
      }),
      { numRuns: 200 },
    );
  });

  it("lets go of the same names whether a summary is kept in memory across writes or read back from its column each time (property)", () => {
    // A full summary whose names come and go, and whose counts also fall by a little (below the least let go).
    const churn = fc.record({ name: fc.nat(2 * topNamesCapacity - 1), add: fc.boolean(), requests: fc.integer({ min: 1, max: 3 }) });
    fc.assert(
      fc.property(fc.array(churn, { maxLength: 2000 }), (ops) => {
        // The writer keeps summaries decoded across writes (with what it learnt of their counts); a reader decodes
        // them afresh: both must hold the same names, counts and order.
        let kept = emptyTopNames();
        let reread = emptyTopNames();
        const exact = new Map<string, number>();
        for (const o of ops) {
          const name = `10.0.${o.name >> 8}.${o.name & 255}`;
          const requests = o.add ? o.requests : -Math.min(o.requests, exact.get(name) ?? 0);
          if (requests === 0) continue;
          exact.set(name, (exact.get(name) ?? 0) + requests);
          addToTopNames(kept, name, requests, 0);
          addToTopNames(reread, name, requests, 0);
          reread = decodeTopNames(encodeTopNames(reread));
        }
        kept = decodeTopNames(encodeTopNames(kept));
        expect([...kept.entries]).toEqual([...reread.entries]);
        expect(kept.floor).toBe(reread.floor);
      }),
      { numRuns: 200 },
    );
  });

  it("lets go of the name whose count fell below every other, wherever it stands in a summary kept in memory", () => {
    const summary = emptyTopNames();
    for (let i = 0; i < topNamesCapacity; i++) addToTopNames(summary, `n${i}`, 5, 0);
    addToTopNames(summary, "first-new", 1, 0); // lets go of n0, the first of the least (5)
    addToTopNames(summary, "n50", -3, 0); // now the least (2), in the middle
    addToTopNames(summary, "second-new", 1, 0);
    expect(summary.entries.has("n50")).toBe(false);
    expect(summary.entries.has("n1")).toBe(true);
    expect(summary.floor).toBe(5);
  });

  it("finds a heavy hitter among a stream of one-off names, with its exact count", () => {
    const summary = emptyTopNames();
    for (let i = 0; i < 10_000; i++) {
      addToTopNames(summary, `one-off-${i}`, 1, 0);
      if (i % 20 === 0) addToTopNames(summary, "10.20.0.11", 1, i % 40 === 0 ? 1 : 0);
    }
    const [top] = topNamesOf([summary], 1);
    expect(top).toEqual({ name: "10.20.0.11", requests: 500, errors: 250, maxError: expect.any(Number) });
    expect(summary.entries.get("10.20.0.11")!.over).toBe(0);
  });

  it("leaves out the names a filter names, and gives no list for n = 0", () => {
    const summary = emptyTopNames();
    addToTopNames(summary, "Googlebot/2.1", 5, 0);
    addToTopNames(summary, "curl/8.5", 2, 1);
    expect(topNamesOf([summary], 10, (name) => name.includes("bot"))).toEqual([{ name: "curl/8.5", requests: 2, errors: 1, maxError: 0 }]);
    expect(topNamesOf([summary], 0)).toEqual([]);
  });
});

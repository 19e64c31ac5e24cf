import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeCursor, decodePosition, encodeCursor, encodePosition } from "../../src/store/clickhouse/read/cursor.js";
import { advanceTo, holds, type Snapshot } from "../../src/store/clickhouse/read/snapshot.js";
import { createChangeClock, legacyLimit, slotOf } from "../../src/store/clickhouse/servers/change-clock.js";

const tick0 = 1_795_000_000_000_000n;
/** A number of `slot` at `tick` µs after tick0. */
const numberOf = (slot: number, tick: number) => ((tick0 + BigInt(tick)) << 12n) | BigInt(slot);

const arbSnapshot = fc
  .record({
    legacy: fc.bigInt({ min: 0n, max: legacyLimit - 1n }),
    marks: fc.dictionary(fc.integer({ min: 1, max: 4095 }).map(String), fc.integer({ min: 0, max: 1_000_000 }), { maxKeys: 6 }),
    at: fc.bigInt({ min: 0n, max: tick0 }),
  })
  .map(({ legacy, marks, at }): Snapshot => ({
    marks: new Map([[0, legacy], ...Object.entries(marks).map(([slot, tick]): [number, bigint] => [Number(slot), numberOf(Number(slot), tick)])]),
    at,
  }));

describe("change numbers of several servers", () => {
  it("are unique across slots and rise past every number a server reads", () => {
    let wall = tick0;
    const a = createChangeClock(1, 0n, () => wall);
    const b = createChangeClock(2, 0n, () => wall - 5_000_000n); // five seconds behind
    const first = a.next();
    b.observe(first);
    const after = b.next();
    expect(after).toBeGreaterThan(first);
    expect([slotOf(first), slotOf(after)]).toEqual([1, 2]);
    wall += 1n;
    expect(new Set([a.next(), a.next(), b.next(), b.next()]).size).toBe(4);
  });

  it("keep a Tail's position of marks, each of its own slot, after a full batch (property)", () => {
    fc.assert(
      fc.property(arbSnapshot, arbSnapshot, fc.integer({ min: 1, max: 4095 }), fc.integer({ min: 0, max: 1_000_000 }), (after, upTo, slot, tick) => {
        const last = numberOf(slot, tick);
        const next = advanceTo(after, upTo, last);
        for (const [s, mark] of next.marks) expect(slotOf(mark) === s || mark === 0n).toBe(true);
        // What the next position holds: what `after` held, and what `upTo` held up to the last number returned.
        for (const seq of [last, last - 4096n, last + 4096n, ...upTo.marks.values(), ...after.marks.values()]) {
          if (seq < 0n) continue;
          expect(holds(next, seq)).toBe(holds(after, seq) || (holds(upTo, seq) && seq <= last));
        }
        // A position reads back as it was written (the slot of each mark from its number).
        expect(decodePosition(encodePosition(next)).marks).toEqual(new Map([...next.marks].filter(([s, m]) => m !== 0n || s === 0)));
      }),
    );
  });

  it("carry a Read's snapshot in its cursors, read back whole (property)", () => {
    fc.assert(
      fc.property(arbSnapshot, fc.bigInt({ min: -(1n << 62n), max: 1n << 62n }), fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), (snapshot, sortTime, rkey) => {
        expect(decodeCursor(encodeCursor({ snapshot, sortTime, rkey }))).toEqual({ snapshot, sortTime, rkey });
      }),
    );
  });
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { rowsWithin, type StoredHours, widthFor } from "../../src/store/clickhouse/read/stored-hours.js";

const hourUs = 3_600_000_000n;

/** Hours (newest first, distinct, with gaps) and their records. */
const storedHours = fc
  .uniqueArray(fc.integer({ min: 0, max: 2_000 }), { minLength: 1, maxLength: 40 })
  .chain((hours) =>
    fc.tuple(fc.constant([...hours].sort((a, b) => b - a)), fc.array(fc.integer({ min: 1, max: 5_000 }), { minLength: hours.length, maxLength: hours.length })),
  )
  .map(([hours, requests]): StoredHours => ({ hours, requests }));

describe("a scan's windows sized by the hours' records", () => {
  it("a width holds about the rows asked for, below any start; none when the hours hold fewer", () => {
    fc.assert(
      fc.property(storedHours, fc.integer({ min: 0, max: 2_100 }), fc.double({ min: 0, max: 1, noNaN: true }), fc.integer({ min: 1, max: 200_000 }), (stored, hour, into, rows) => {
        const from = BigInt(hour) * hourUs + BigInt(Math.floor(into * Number(hourUs)));
        const below = rowsWithin(stored, from, from + 1n);
        const width = widthFor(stored, from, rows);
        if (width === undefined) {
          expect(below).toBeLessThan(rows + 1e-6 * rows);
          return;
        }
        expect(width).toBeGreaterThan(0n);
        // (A µs less holds fewer; the rounding down of the lower bound gives at most a µs's records more.)
        const held = rowsWithin(stored, from, width);
        expect(held).toBeGreaterThanOrEqual(rows - 1e-6 * rows - 1e-3);
        expect(rowsWithin(stored, from, width - 1n)).toBeLessThan(rows + 1e-6 * rows);
      }),
      { numRuns: 2_000 },
    );
  });

  it("reaches across hours that hold nothing", () => {
    // Records in progress in the newest hour, the rest days below it.
    const stored: StoredHours = { hours: [500, 200, 199], requests: [20, 3_600, 3_600] };
    const from = 501n * hourUs;
    const width = widthFor(stored, from, 1_000)!;
    // 20 in hour 500, then 980 of hour 200's 3,600 (its newest 980 seconds).
    const lower = from - width;
    expect(lower - (201n * hourUs - 980_000_000n)).toBeGreaterThanOrEqual(0n);
    expect(lower - (201n * hourUs - 980_000_000n)).toBeLessThanOrEqual(1n);
    expect(rowsWithin(stored, from, width)).toBeCloseTo(1_000, 2);
    expect(widthFor(stored, from, 7_221)).toBeUndefined();
  });
});

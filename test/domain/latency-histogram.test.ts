import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  emptyHistogram,
  histogramMax,
  histogramOf,
  histogramPercentile,
  latencyBucket,
  latencyBucketCount,
  latencyBucketRange,
  latencyBucketStarts,
  mergeHistogram,
} from "../../src/domain/latency-histogram.js";
import { addEncodedCounts, addToSparse, encodeHistogram, encodeSparse, sparseCountsOf } from "../../src/store/sqlite/rows/histogram-blob.js";

/** The nearest-rank percentile of the values themselves. */
function exactPercentile(latencies: readonly number[], percent: number): number {
  const sorted = [...latencies].sort((a, b) => a - b);
  return sorted[Math.max(1, Math.ceil((sorted.length * percent) / 100)) - 1]!;
}

/** Latencies from 0 to ~3 h, spread over every scale. */
const latency = fc.oneof(fc.nat(100), fc.nat(100_000), fc.nat(10_000_000), fc.nat(11_000_000_000));

describe("latency buckets", () => {
  it("start at 0 and 1 µs and grow by about 2^(1/4) (under 1.2×) from 64 µs up to the open bucket at 2^32 µs", () => {
    expect(latencyBucketStarts.slice(0, 10)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 10]);
    expect(latencyBucketStarts.at(-1)).toBe(2 ** 32);
    expect(latencyBucketCount).toBe(125);
    for (let i = 1; i < latencyBucketCount; i++) {
      expect(latencyBucketStarts[i]).toBeGreaterThan(latencyBucketStarts[i - 1]!);
      if (latencyBucketStarts[i - 1]! >= 64) expect(latencyBucketStarts[i]! / latencyBucketStarts[i - 1]!).toBeLessThan(1.2);
    }
    expect(latencyBucketRange(latencyBucketCount - 1)).toEqual({ start: 2 ** 32, end: Infinity });
  });

  it("put every latency in the bucket whose range holds it", () => {
    fc.assert(
      fc.property(latency, (l) => {
        const { start, end } = latencyBucketRange(latencyBucket(l));
        expect(l >= start && l < end).toBe(true);
      }),
    );
    expect(latencyBucket(-3)).toBe(0);
  });
});

describe("percentiles and max from histograms (property)", () => {
  it("lie in the same bucket as the exact nearest-rank value, and the max is exact", () => {
    fc.assert(
      fc.property(fc.array(latency, { minLength: 1, maxLength: 300 }), fc.integer({ min: 1, max: 100 }), (latencies, percent) => {
        const h = histogramOf(latencies);
        const p = histogramPercentile(h, percent);
        expect(latencyBucket(p)).toBe(latencyBucket(exactPercentile(latencies, percent)));
        expect(histogramMax(h)).toBe(Math.max(...latencies));
        expect(p).toBeLessThanOrEqual(histogramMax(h));
      }),
    );
  });

  it("merge exactly: the merge of two is the histogram of both, and taking one out again leaves the other", () => {
    fc.assert(
      fc.property(fc.array(latency, { maxLength: 100 }), fc.array(latency, { minLength: 1, maxLength: 100 }), (a, b) => {
        const merged = histogramOf(a);
        mergeHistogram(merged, histogramOf(b));
        expect(merged).toEqual(histogramOf([...a, ...b]));
        mergeHistogram(merged, histogramOf(a), -1);
        expect(merged.counts).toEqual(histogramOf(b).counts);
        // The max still counts a's (it cannot be taken out) but stays in the bucket of b's max.
        expect(latencyBucket(histogramMax(merged))).toBe(latencyBucket(Math.max(...b)));
      }),
    );
  });

  it("read 0 from an empty histogram", () => {
    expect(histogramPercentile(emptyHistogram(), 50)).toBe(0);
    expect(histogramMax(emptyHistogram())).toBe(0);
  });
});

describe("histogram blobs (SQLite)", () => {
  it("round-trip any counts (a Map or dense), and add or take out into dense counts", () => {
    fc.assert(
      fc.property(fc.array(latency, { maxLength: 200 }), fc.nat(2 ** 40), (latencies, big) => {
        const h = histogramOf(latencies);
        h.counts.set(latencyBucketCount - 1, big + 1);
        const dense = new Float64Array(latencyBucketCount);
        addEncodedCounts(dense, encodeHistogram(h.counts));
        expect(new Map([...dense.entries()].filter(([, n]) => n !== 0))).toEqual(h.counts);
        expect(encodeHistogram(dense)).toEqual(encodeHistogram(h.counts));
        addEncodedCounts(dense, encodeHistogram(h.counts), -1);
        expect(dense.every((n) => n === 0)).toBe(true);
      }),
    );
  });

  it("keep sparse counts as dense ones: the same blob after any adds and takeouts, counts at 0 or below left out", () => {
    const step = fc.record({ bucket: fc.integer({ min: 0, max: latencyBucketCount - 1 }), delta: fc.integer({ min: -3, max: 3 }) });
    fc.assert(
      fc.property(fc.array(latency, { maxLength: 50 }), fc.array(step, { maxLength: 200 }), (latencies, steps) => {
        const start = encodeHistogram(histogramOf(latencies).counts);
        const dense = new Float64Array(latencyBucketCount);
        addEncodedCounts(dense, start);
        const sparse = sparseCountsOf(start);
        expect(encodeSparse(sparse)).toEqual(start);
        for (const { bucket, delta } of steps) {
          dense[bucket]! += delta;
          addToSparse(sparse, bucket, delta);
          expect(encodeSparse(sparse)).toEqual(encodeHistogram(dense));
        }
        expect(sparse.buckets).toEqual([...sparse.buckets].sort((a, b) => a - b));
      }),
    );
  });
});

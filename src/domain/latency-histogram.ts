/**
 * Latency histograms with fixed, log-scale buckets: every backend counts a
 * latency in the same bucket, so histograms of any hours, routes or versions
 * merge exactly (by adding counts), and percentiles read from a merged
 * histogram are as good as from one of the raw latencies.
 *
 * Bucket 0 holds latencies under 1 µs (0, or a negative value a writer
 * sent). Bucket i ≥ 1 starts at `latencyBucketStarts[i]` µs: the rounded
 * powers 2^(k/4), k = 0…128, without repeats (the first few round to the
 * same integer), so buckets are about 19% wide from ~10 µs up. The last
 * bucket (from 2^32 µs, about 71.6 minutes) is open-ended. The starts are
 * integers so that another backend (SQL, another language) can use the same
 * table and count every latency in the same bucket.
 */
export const latencyBucketStarts: readonly number[] = (() => {
  const starts = [0];
  for (let k = 0; k <= 128; k++) {
    const start = Math.round(2 ** (k / 4));
    if (start !== starts.at(-1)) starts.push(start);
  }
  return starts;
})();

export const latencyBucketCount = latencyBucketStarts.length;

/** The bucket of a latency (µs): the last bucket whose start is at most the latency. */
export function latencyBucket(latencyUs: number): number {
  let lo = 0;
  let hi = latencyBucketCount - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (latencyBucketStarts[mid]! <= latencyUs) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** The latencies (µs) bucket `i` holds: from `start` (inclusive) to `end` (exclusive; Infinity for the last). */
export function latencyBucketRange(i: number): { start: number; end: number } {
  return { start: latencyBucketStarts[i]!, end: latencyBucketStarts[i + 1] ?? Infinity };
}

/**
 * Counts per bucket (only the buckets in use) and an upper bound on the
 * largest latency counted: exact while no counted latency has been taken
 * out again, and never above the end of the highest bucket in use.
 */
export interface LatencyHistogram {
  counts: Map<number, number>;
  max: number;
}

export function emptyHistogram(): LatencyHistogram {
  return { counts: new Map(), max: 0 };
}

/** The histogram of these latencies (µs). */
export function histogramOf(latencies: Iterable<number>): LatencyHistogram {
  const h = emptyHistogram();
  for (const latency of latencies) {
    const bucket = latencyBucket(latency);
    h.counts.set(bucket, (h.counts.get(bucket) ?? 0) + 1);
    if (latency > h.max) h.max = latency;
  }
  return h;
}

/** Adds `sign` × the counts of `from` into `into` (a count that reaches 0 is dropped); the max is the larger. */
export function mergeHistogram(into: LatencyHistogram, from: LatencyHistogram, sign: 1 | -1 = 1): void {
  for (const [bucket, count] of from.counts) {
    const sum = (into.counts.get(bucket) ?? 0) + sign * count;
    if (sum === 0) into.counts.delete(bucket);
    else into.counts.set(bucket, sum);
  }
  if (sign === 1 && from.max > into.max) into.max = from.max;
}

/** The highest bucket in use, or -1 for an empty histogram. */
function topBucket(h: LatencyHistogram): number {
  let top = -1;
  for (const [bucket, count] of h.counts) if (count > 0 && bucket > top) top = bucket;
  return top;
}

/**
 * The largest latency (µs): the recorded max, unless it is above the highest
 * bucket still in use (its latency was taken out since), then the last
 * value of that bucket. Either way it lies in the bucket of the true max.
 */
export function histogramMax(h: LatencyHistogram): number {
  const top = topBucket(h);
  if (top < 0) return 0;
  const { start, end } = latencyBucketRange(top);
  return Math.max(start, Math.min(h.max, end - 1));
}

/**
 * The nearest-rank percentile (`percent` of 100): the latency at rank
 * ⌈n·percent/100⌉ in sorted order lies in the bucket found here, so the value
 * given (the bucket's geometric middle, never above the max) is in the same
 * bucket as the exact percentile.
 */
export function histogramPercentile(h: LatencyHistogram, percent: number): number {
  return histogramPercentiles(h, [percent])[0]!;
}

/** The buckets in use of the histogram being read, ascending (at most every bucket). */
const scratch = new Float64Array(latencyBucketCount);

/**
 * Several percentiles (ascending `percents`) in one walk over the buckets,
 * each as histogramPercentile gives it. Stats reads these for every bucket
 * of a chart: one pass over the counts sorting their buckets into a scratch
 * array as it goes (a histogram uses a few dozen buckets at most), nothing
 * allocated but the answer.
 */
export function histogramPercentiles(h: LatencyHistogram, percents: readonly number[]): number[] {
  let used = 0;
  let n = 0;
  for (const [bucket, count] of h.counts) {
    if (count <= 0) continue;
    let at = used++;
    for (; at > 0 && scratch[at - 1]! > bucket; at--) scratch[at] = scratch[at - 1]!;
    scratch[at] = bucket;
    n += count;
  }
  if (n === 0) return percents.map(() => 0);
  const { start, end } = latencyBucketRange(scratch[used - 1]!);
  const max = Math.max(start, Math.min(h.max, end - 1)); // histogramMax, from the top bucket found here
  const values: number[] = [];
  let seen = 0;
  let i = 0;
  for (const percent of percents) {
    const rank = Math.max(1, Math.ceil((n * percent) / 100));
    while (i < used - 1 && seen + h.counts.get(scratch[i]!)! < rank) seen += h.counts.get(scratch[i++]!)!;
    values.push(Math.min(bucketMiddle(scratch[i]!), max));
  }
  return values;
}

/**
 * A latency that stands for a bucket: the geometric middle of the integers
 * it holds; for the open-ended last bucket, Infinity (the max stands for it).
 */
function bucketMiddle(bucket: number): number {
  const { start, end } = latencyBucketRange(bucket);
  if (end === Infinity) return Infinity;
  return Math.max(start, Math.min(end - 1, Math.round(Math.sqrt(Math.max(start, 1) * (end - 1)))));
}

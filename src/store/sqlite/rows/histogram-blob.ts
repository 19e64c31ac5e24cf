import { createVarintWriter } from "./varint.js";

/**
 * A latency histogram's counts as a column value: (bucket index − previous
 * index, count) pairs as unsigned LEB128 varints, buckets ascending. A
 * typical hour of one route takes a few dozen bytes. Counts of 0 or below
 * are left out (a row whose requests reach 0 is deleted instead).
 *
 * The counts come as a Map (bucket → count) or dense (index = bucket), as
 * the writer keeps them.
 */
export function encodeHistogram(counts: ReadonlyMap<number, number> | Float64Array): Buffer {
  if (counts instanceof Float64Array) return encodeDense(counts);
  const out = createVarintWriter();
  let previous = 0;
  const put = (bucket: number, count: number) => {
    out.uint(bucket - previous);
    out.uint(count);
    previous = bucket;
  };
  for (const bucket of [...counts.keys()].sort((a, b) => a - b)) if (counts.get(bucket)! > 0) put(bucket, counts.get(bucket)!);
  return out.done();
}

/** Where encodeDense and encodeSparse write (grown as needed): the writer encodes a cell's histogram every time it moves. */
let scratch = new Uint8Array(0);

/** Writes `n` as an unsigned varint into `out` at `at`; returns where it ends. */
function writeUint(out: Uint8Array, at: number, n: number): number {
  while (n >= 0x80) {
    out[at++] = (n % 0x80) | 0x80;
    n = Math.floor(n / 0x80);
  }
  out[at++] = n;
  return at;
}

/** The scratch array with room for `pairs` (bucket step, count) pairs: a varint below 2^53 takes at most 8 bytes. */
function scratchFor(pairs: number): Uint8Array {
  if (scratch.length < pairs * 16) scratch = new Uint8Array(pairs * 16);
  return scratch;
}

/** Dense counts encoded as encodeHistogram does, written in place (no array of bytes to copy). */
function encodeDense(counts: Float64Array): Buffer {
  const out = scratchFor(counts.length);
  let at = 0;
  let previous = 0;
  for (let bucket = 0; bucket < counts.length; bucket++) {
    const count = counts[bucket]!;
    if (!(count > 0)) continue;
    at = writeUint(out, at, bucket - previous);
    at = writeUint(out, at, count);
    previous = bucket;
  }
  return Buffer.from(out.subarray(0, at));
}

/**
 * A histogram's counts as the writer keeps a cell's: its buckets ascending,
 * each with its count (a count that falls to 0 or below stays, and is left
 * out of the encoding, as in dense counts). Most cells have a few buckets:
 * kept dense (125), a cell's counts were scanned whole at every write.
 */
export interface SparseCounts {
  buckets: number[];
  counts: number[];
}

/** An encoded histogram's counts, sparse (none when there is no blob). */
export function sparseCountsOf(blob?: Uint8Array): SparseCounts {
  const sparse: SparseCounts = { buckets: [], counts: [] };
  if (blob) {
    eachPair(blob, (bucket, count) => {
      sparse.buckets.push(bucket);
      sparse.counts.push(count);
    });
  }
  return sparse;
}

/** Adds `delta` to a bucket's count (the bucket taken in when new). */
export function addToSparse(sparse: SparseCounts, bucket: number, delta: number): void {
  const { buckets, counts } = sparse;
  let lo = 0;
  let hi = buckets.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (buckets[mid]! < bucket) lo = mid + 1;
    else hi = mid;
  }
  if (buckets[lo] === bucket) {
    counts[lo]! += delta;
    return;
  }
  buckets.splice(lo, 0, bucket);
  counts.splice(lo, 0, delta);
}

/** Sparse counts encoded as encodeHistogram does. */
export function encodeSparse({ buckets, counts }: SparseCounts): Buffer {
  const out = scratchFor(buckets.length);
  let at = 0;
  let previous = 0;
  for (let i = 0; i < buckets.length; i++) {
    const count = counts[i]!;
    if (!(count > 0)) continue;
    at = writeUint(out, at, buckets[i]! - previous);
    at = writeUint(out, at, count);
    previous = buckets[i]!;
  }
  return Buffer.from(out.subarray(0, at));
}

/** Calls `visit` with each (bucket, count) of an encoded histogram, buckets ascending. */
function eachPair(blob: Uint8Array, visit: (bucket: number, count: number) => void): void {
  let at = 0;
  let bucket = 0;
  const uint = () => {
    let n = 0;
    let scale = 1;
    for (;;) {
      const byte = blob[at++]!;
      n += (byte & 0x7f) * scale;
      if (byte < 0x80) return n;
      scale *= 0x80;
    }
  };
  while (at < blob.length) {
    bucket += uint();
    visit(bucket, uint());
  }
}

/**
 * Adds the counts of an encoded histogram, times `sign`, into dense counts
 * (index = bucket): what Stats does to sum thousands of cells a call.
 */
export function addEncodedCounts(into: Float64Array, blob: Uint8Array, sign: 1 | -1 = 1): void {
  eachPair(blob, (bucket, count) => {
    into[bucket]! += sign * count;
  });
}

/** The counts of an encoded histogram as a Map (bucket → count), buckets ascending. */
export function decodeHistogramCounts(blob: Uint8Array): Map<number, number> {
  const counts = new Map<number, number>();
  eachPair(blob, (bucket, count) => counts.set(bucket, count));
  return counts;
}

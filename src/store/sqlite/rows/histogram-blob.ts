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

/** Where encodeDense writes (grown as needed): the writer encodes a cell's histogram every time it moves. */
let scratch = new Uint8Array(0);

/** Dense counts encoded as encodeHistogram does, written in place (no array of bytes to copy). */
function encodeDense(counts: Float64Array): Buffer {
  // A varint of a number below 2^53 takes at most 8 bytes: a bucket's step and its count, 16.
  if (scratch.length < counts.length * 16) scratch = new Uint8Array(counts.length * 16);
  const out = scratch;
  let at = 0;
  let previous = 0;
  const uint = (n: number) => {
    while (n >= 0x80) {
      out[at++] = (n % 0x80) | 0x80;
      n = Math.floor(n / 0x80);
    }
    out[at++] = n;
  };
  for (let bucket = 0; bucket < counts.length; bucket++) {
    const count = counts[bucket]!;
    if (!(count > 0)) continue;
    uint(bucket - previous);
    uint(count);
    previous = bucket;
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

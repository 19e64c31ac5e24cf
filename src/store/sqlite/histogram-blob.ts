import type { LatencyHistogram } from "../../domain/latency-histogram.js";
import { VarintReader, createVarintWriter } from "./varint.js";

/**
 * A latency histogram's counts as a column value: (bucket index − previous
 * index, count) pairs as unsigned LEB128 varints, buckets ascending. A
 * typical hour of one route takes a few dozen bytes. Counts of 0 or below
 * are left out (a row whose requests reach 0 is deleted instead).
 *
 * The counts come as a Map (bucket → count) or dense (index = bucket), as
 * the writer keeps them.
 */
export function encodeHistogram(counts: ReadonlyMap<number, number> | Int32Array): Buffer {
  const out = createVarintWriter();
  let previous = 0;
  const put = (bucket: number, count: number) => {
    out.uint(bucket - previous);
    out.uint(count);
    previous = bucket;
  };
  if (counts instanceof Int32Array) {
    for (let bucket = 0; bucket < counts.length; bucket++) if (counts[bucket]! > 0) put(bucket, counts[bucket]!);
  } else {
    for (const bucket of [...counts.keys()].sort((a, b) => a - b)) if (counts.get(bucket)! > 0) put(bucket, counts.get(bucket)!);
  }
  return out.done();
}

/** Calls `visit` with each bucket and count of an encoded histogram, buckets ascending. */
export function forEachEncodedBucket(blob: Uint8Array, visit: (bucket: number, count: number) => void): void {
  const input = new VarintReader(blob);
  let bucket = 0;
  while (input.more) {
    bucket += input.uint();
    visit(bucket, input.uint());
  }
}

/** Adds the counts of an encoded histogram, times `sign`, into `into`. */
export function addEncodedHistogram(into: LatencyHistogram, blob: Uint8Array, sign: 1 | -1 = 1): void {
  forEachEncodedBucket(blob, (bucket, count) => {
    const sum = (into.counts.get(bucket) ?? 0) + sign * count;
    if (sum === 0) into.counts.delete(bucket);
    else into.counts.set(bucket, sum);
  });
}

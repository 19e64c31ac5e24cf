import type { LatencyHistogram } from "../../domain/latency-histogram.js";
import { createVarintReader, createVarintWriter } from "./varint.js";

/**
 * A latency histogram's counts as a column value: (bucket index − previous
 * index, count) pairs as unsigned LEB128 varints, buckets ascending. A
 * typical hour of one route takes a few dozen bytes. Counts of 0 or below
 * are left out (a row whose requests reach 0 is deleted instead).
 */
export function encodeHistogram(counts: ReadonlyMap<number, number>): Buffer {
  const buckets = [...counts.keys()].filter((b) => counts.get(b)! > 0).sort((a, b) => a - b);
  const out = createVarintWriter();
  let previous = 0;
  for (const bucket of buckets) {
    out.uint(bucket - previous);
    out.uint(counts.get(bucket)!);
    previous = bucket;
  }
  return out.done();
}

/** Adds the counts of an encoded histogram, times `sign`, into `into`. */
export function addEncodedHistogram(into: LatencyHistogram, blob: Uint8Array, sign: 1 | -1 = 1): void {
  const input = createVarintReader(blob);
  let bucket = 0;
  while (input.more) {
    bucket += input.uint();
    const sum = (into.counts.get(bucket) ?? 0) + sign * input.uint();
    if (sum === 0) into.counts.delete(bucket);
    else into.counts.set(bucket, sum);
  }
}

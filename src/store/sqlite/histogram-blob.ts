import type { LatencyHistogram } from "../../domain/latency-histogram.js";

/**
 * A latency histogram's counts as a column value: (bucket index − previous
 * index, count) pairs as unsigned LEB128 varints, buckets ascending. A
 * typical hour of one route takes a few dozen bytes. Counts of 0 or below
 * are left out (a row whose requests reach 0 is deleted instead).
 */
export function encodeHistogram(counts: ReadonlyMap<number, number>): Buffer {
  const buckets = [...counts.keys()].filter((b) => counts.get(b)! > 0).sort((a, b) => a - b);
  const bytes: number[] = [];
  const varint = (n: number) => {
    while (n >= 0x80) {
      bytes.push((n % 0x80) | 0x80);
      n = Math.floor(n / 0x80);
    }
    bytes.push(n);
  };
  let previous = 0;
  for (const bucket of buckets) {
    varint(bucket - previous);
    varint(counts.get(bucket)!);
    previous = bucket;
  }
  return Buffer.from(bytes);
}

/** Adds the counts of an encoded histogram, times `sign`, into `into`. */
export function addEncodedHistogram(into: LatencyHistogram, blob: Uint8Array, sign: 1 | -1 = 1): void {
  let at = 0;
  const varint = () => {
    let n = 0;
    let scale = 1;
    for (;;) {
      const byte = blob[at++]!;
      n += (byte & 0x7f) * scale;
      if (byte < 0x80) return n;
      scale *= 0x80;
    }
  };
  let bucket = 0;
  while (at < blob.length) {
    bucket += varint();
    const sum = (into.counts.get(bucket) ?? 0) + sign * varint();
    if (sum === 0) into.counts.delete(bucket);
    else into.counts.set(bucket, sum);
  }
}

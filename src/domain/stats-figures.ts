import { emptyHistogram, type LatencyHistogram, mergeHistogram } from "./latency-histogram.js";

/** What a set of finished requests adds up to (errors: status 500 to 599; bytes: response_size). */
export interface StatsFigures {
  requests: number;
  errors: number;
  bytes: number;
  latency: LatencyHistogram;
}

export const noFigures = (): StatsFigures => ({ requests: 0, errors: 0, bytes: 0, latency: emptyHistogram() });

/** Adds `from` into `into`: counts add up, histograms merge exactly. */
export function addFigures(into: StatsFigures, from: StatsFigures): void {
  into.requests += from.requests;
  into.errors += from.errors;
  into.bytes += from.bytes;
  mergeHistogram(into.latency, from.latency);
}

/** Status classes 0 (other) to 5 (5xx). */
export const statusClassCount = 6;

/** One time bucket: every route, status class and version counted, merged, and each class's requests. */
export interface StatsBucket extends StatsFigures {
  startHour: number;
  endHour: number;
  /** Requests per status class (index: class). */
  classRequests: number[];
}

export function emptyBucket(startHour: number, endHour: number): StatsBucket {
  return { startHour, endHour, classRequests: new Array<number>(statusClassCount).fill(0), ...noFigures() };
}

/** Records of one time bucket and status class each (routes and versions as they may be) merged by bucket, by start. */
export function bucketsOf(records: readonly (StatsFigures & { startHour: number; endHour: number; statusClass: number })[]): StatsBucket[] {
  const buckets = new Map<number, StatsBucket>();
  for (const r of records) {
    let bucket = buckets.get(r.startHour);
    if (!bucket) buckets.set(r.startHour, (bucket = emptyBucket(r.startHour, r.endHour)));
    addFigures(bucket, r);
    bucket.classRequests[r.statusClass]! += r.requests;
  }
  return [...buckets.values()].sort((a, b) => a.startHour - b.startHour);
}

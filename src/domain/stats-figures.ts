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

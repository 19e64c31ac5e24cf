import type { LogUsageResponse, StatsFigures, StatsResponse } from "../gen/reqlog/v1/log_service_pb.js";
import { bucketIndex, bucketStarts, type HourRange } from "./time-range.js";

/** Per-bucket figures from Usage: what is stored (every request, finished or not, of every module). */
export interface UsageSeries {
  x: number[];
  requests: number[];
  bytes: number[];
  lines: number[];
  /** Requests per bucket of each version, most requests first. */
  byVersion: { version: string; requests: number[] }[];
  totals: { requests: number; bytes: number; lines: number };
}

const zeros = (n: number) => new Array<number>(n).fill(0);
const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);

/** Usage's records (one per bucket and version) laid out on the range's buckets; missing buckets are 0. */
export function usageSeries(range: HourRange, usage: LogUsageResponse): UsageSeries {
  const x = bucketStarts(range);
  const requests = zeros(x.length);
  const bytes = zeros(x.length);
  const lines = zeros(x.length);
  const versions = new Map<string, number[]>();
  for (const record of usage.usage) {
    const i = bucketIndex(range, record.startTime);
    if (i < 0) continue;
    requests[i]! += Number(record.count);
    bytes[i]! += Number(record.totalSize);
    lines[i]! += record.records;
    let perVersion = versions.get(record.versionId);
    if (perVersion === undefined) versions.set(record.versionId, (perVersion = zeros(x.length)));
    perVersion[i]! += Number(record.count);
  }
  const byVersion = [...versions]
    .map(([version, counts]) => ({ version, requests: counts, total: sum(counts) }))
    .sort((a, b) => b.total - a.total || a.version.localeCompare(b.version))
    .map(({ version, requests: counts }) => ({ version, requests: counts }));
  return { x, requests, bytes, lines, byVersion, totals: { requests: sum(requests), bytes: sum(bytes), lines: sum(lines) } };
}

/** Status classes as Stats numbers them: 0 (outside 100..599), 1 to 5 for 1xx to 5xx. */
const statusClasses = [0, 1, 2, 3, 4, 5] as const;

/** Per-bucket figures from Stats: finished requests only, filtered by module and version. */
export interface StatsSeries {
  x: number[];
  requests: number[];
  errors: number[];
  bytesSent: number[];
  /** Microseconds; null where a bucket has no requests (a gap in the chart, not a 0). */
  p50: (number | null)[];
  p90: (number | null)[];
  p99: (number | null)[];
  max: (number | null)[];
  /** Requests per bucket of each status class (index: class). */
  byClass: number[][];
  totals: { requests: number; errors: number; bytesSent: number };
}

/**
 * A Stats answer's buckets (asked at the range's resolution, so each bucket's
 * figures are those of all its requests: percentiles merged on the server,
 * from its histograms) laid out as series; missing buckets are gaps.
 */
export function statsSeries(range: HourRange, answer: StatsResponse | undefined): StatsSeries {
  const x = bucketStarts(range);
  const figures: (StatsFigures | undefined)[] = x.map(() => undefined);
  const byClass = statusClasses.map(() => zeros(x.length));
  for (const bucket of answer?.bucket ?? []) {
    const i = bucketIndex(range, Number(bucket.startTime));
    if (i < 0) continue;
    figures[i] = bucket.figures;
    bucket.classRequests.forEach((n, c) => {
      if (c < byClass.length) byClass[c]![i]! += Number(n);
    });
  }
  const count = (pick: (f: StatsFigures) => bigint) => figures.map((f) => (f ? Number(pick(f)) : 0));
  const latency = (pick: (f: StatsFigures) => bigint) => figures.map((f) => (f && f.requests > 0n ? Number(pick(f)) : null));
  const requests = count((f) => f.requests);
  const errors = count((f) => f.errors);
  const bytesSent = count((f) => f.bytesSent);
  return {
    x,
    requests,
    errors,
    bytesSent,
    p50: latency((f) => f.latencyP50),
    p90: latency((f) => f.latencyP90),
    p99: latency((f) => f.latencyP99),
    max: latency((f) => f.latencyMax),
    byClass,
    totals: { requests: sum(requests), errors: sum(errors), bytesSent: sum(bytesSent) },
  };
}

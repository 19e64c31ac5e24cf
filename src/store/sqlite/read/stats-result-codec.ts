import { emptyHistogram, type LatencyHistogram } from "../../../domain/latency-histogram.js";
import { statusClassCount } from "../../../domain/stats-figures.js";
import type { StatsBucket, StatsClient, StatsFigures, StatsRecord, StatsResult, StatsRoute } from "../../store.js";

/**
 * A Stats answer as it crosses from a read worker to the main thread: its
 * numbers in one Float64Array (moved, not copied) and each distinct string
 * once. Structured cloning the answer itself costs far more than reading it
 * (a month of a busy app's hourly route records is ~16,000 records, each with
 * a histogram Map: 0.2–0.5 s to clone).
 */
export interface PackedStats {
  numbers: Float64Array;
  strings: string[];
}

/** Absent string or number (every real one is ≥ 0). */
const none = -1;

export function packStats(result: StatsResult): PackedStats {
  const numbers: number[] = [];
  const strings: string[] = [];
  const index = new Map<string, number>();
  const text = (s: string | undefined) => {
    if (s === undefined) return none;
    let i = index.get(s);
    if (i === undefined) {
      index.set(s, (i = strings.length));
      strings.push(s);
    }
    return i;
  };
  const figures = (f: StatsFigures) => {
    numbers.push(f.requests, f.errors, f.bytes, f.latency.max, f.latency.counts.size);
    for (const [bucket, count] of f.latency.counts) numbers.push(bucket, count);
  };
  numbers.push(result.startHour ?? none, result.endHour ?? none, result.records.length);
  for (const r of result.records) {
    numbers.push(r.startHour, r.endHour, text(r.route), r.statusClass, text(r.moduleId), text(r.versionId));
    figures(r);
  }
  numbers.push(result.buckets.length);
  for (const b of result.buckets) {
    numbers.push(b.startHour, b.endHour, ...b.classRequests);
    figures(b);
  }
  numbers.push(result.routes.length);
  for (const r of result.routes) {
    numbers.push(text(r.route));
    figures(r);
  }
  for (const clients of [result.clientIps, result.userAgents]) {
    numbers.push(clients.length);
    for (const c of clients) numbers.push(text(c.name), c.requests, c.errors, c.maxError);
  }
  return { numbers: Float64Array.from(numbers), strings };
}

export function unpackStats({ numbers, strings }: PackedStats): StatsResult {
  let at = 0;
  const next = () => numbers[at++]!;
  const text = () => {
    const i = next();
    return i === none ? undefined : strings[i]!;
  };
  const figures = (): StatsFigures => {
    const requests = next();
    const errors = next();
    const bytes = next();
    const latency: LatencyHistogram = emptyHistogram();
    latency.max = next();
    for (let n = next(); n > 0; n--) latency.counts.set(next(), next());
    return { requests, errors, bytes, latency };
  };
  const list = <T>(item: () => T): T[] => Array.from({ length: next() }, item);
  const startHour = next();
  const endHour = next();
  const records = list((): StatsRecord => {
    const [start, end, route, statusClass, moduleId, versionId] = [next(), next(), text(), next(), text(), text()];
    return {
      startHour: start,
      endHour: end,
      ...(route !== undefined ? { route } : {}),
      statusClass,
      ...(moduleId !== undefined ? { moduleId, versionId } : {}),
      ...figures(),
    };
  });
  const buckets = list((): StatsBucket => {
    const [start, end] = [next(), next()];
    const classRequests = Array.from({ length: statusClassCount }, next);
    return { startHour: start, endHour: end, classRequests, ...figures() };
  });
  const routes = list((): StatsRoute => {
    const route = text();
    return { ...(route !== undefined ? { route } : {}), ...figures() };
  });
  const client = (): StatsClient => ({ name: text()!, requests: next(), errors: next(), maxError: next() });
  const clientIps = list(client);
  const userAgents = list(client);
  return {
    records,
    buckets,
    ...(startHour !== none ? { startHour } : {}),
    ...(endHour !== none ? { endHour } : {}),
    routes,
    clientIps,
    userAgents,
  };
}

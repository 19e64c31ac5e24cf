import { create } from "@bufbuild/protobuf";
import {
  type StatsFigures as StatsFiguresMessage,
  StatsFiguresSchema,
  type StatsRequest,
  type StatsResponse,
  StatsResponseSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { emptyHistogram, histogramMax, histogramPercentile, mergeHistogram } from "../domain/latency-histogram.js";
import { planStats } from "../query/stats-plan.js";
import type { StatsClient, StatsFigures } from "../store/store.js";
import type { UnaryHandler } from "./call-context.js";
import type { ServiceDeps } from "./log-service.js";

function figuresMessage(f: StatsFigures): StatsFiguresMessage {
  const percentile = (p: number) => BigInt(histogramPercentile(f.latency, p));
  return create(StatsFiguresSchema, {
    requests: BigInt(f.requests),
    errors: BigInt(f.errors),
    bytesSent: BigInt(f.bytes),
    latencyP50: percentile(50),
    latencyP90: percentile(90),
    latencyP99: percentile(99),
    latencyMax: BigInt(histogramMax(f.latency)),
  });
}

const noFigures = (): StatsFigures => ({ requests: 0, errors: 0, bytes: 0, latency: emptyHistogram() });

function addFigures(into: StatsFigures, from: StatsFigures): void {
  into.requests += from.requests;
  into.errors += from.errors;
  into.bytes += from.bytes;
  mergeHistogram(into.latency, from.latency);
}

interface RouteTotal extends StatsFigures {
  route?: string;
  p99: number;
}

/** Each route over the whole range (buckets, status classes and versions merged). */
function routeTotals(records: readonly (StatsFigures & { route?: string })[]): RouteTotal[] {
  const routes = new Map<string | undefined, StatsFigures & { route?: string }>();
  for (const r of records) {
    let total = routes.get(r.route);
    if (!total) routes.set(r.route, (total = { ...(r.route !== undefined ? { route: r.route } : {}), ...noFigures() }));
    addFigures(total, r);
  }
  return [...routes.values()].map((t) => ({ ...t, p99: histogramPercentile(t.latency, 99) }));
}

/** By route, the overflow entry (no route) last. */
function byRoute(a: RouteTotal, b: RouteTotal): number {
  if (a.route === undefined || b.route === undefined) return (a.route === undefined ? 1 : 0) - (b.route === undefined ? 1 : 0);
  return a.route < b.route ? -1 : a.route > b.route ? 1 : 0;
}

const client = (c: StatsClient) => ({
  ...(c.name !== undefined ? { name: c.name } : {}),
  requests: BigInt(c.requests),
  errors: BigInt(c.errors),
});

/** Stats: requests, errors, bytes and latency per time bucket, route and status class, and top lists. */
export function createStatsHandler({ store, limits }: ServiceDeps): UnaryHandler<StatsRequest, StatsResponse> {
  return async (request, call) => {
    const plan = planStats(request, limits);
    call.authorize([plan.appId]);
    const result = await store.stats(plan, call.signal);
    const total = noFigures();
    for (const r of result.records) addFigures(total, r);
    const routes = routeTotals(result.records);
    const top = (order: (a: RouteTotal, b: RouteTotal) => number) =>
      [...routes]
        .sort((a, b) => order(a, b) || byRoute(a, b))
        .slice(0, plan.topN)
        .map((t) => ({ ...(t.route !== undefined ? { route: t.route } : {}), figures: figuresMessage(t) }));
    return create(StatsResponseSchema, {
      record: result.records.map((r) => ({
        startTime: BigInt(r.startHour) * 3600n,
        endTime: BigInt(r.endHour) * 3600n,
        ...(r.route !== undefined ? { route: r.route } : {}),
        statusClass: r.statusClass,
        ...(r.moduleId !== undefined ? { moduleId: r.moduleId, versionId: r.versionId } : {}),
        figures: figuresMessage(r),
      })),
      total: figuresMessage(total),
      ...(result.startHour !== undefined && result.endHour !== undefined
        ? { startTime: BigInt(result.startHour) * 3600n, endTime: BigInt(result.endHour) * 3600n }
        : {}),
      topRouteByRequests: top((a, b) => b.requests - a.requests),
      topRouteByP99: top((a, b) => b.p99 - a.p99 || b.requests - a.requests),
      topClientIp: result.clientIps.map(client),
      topUserAgent: result.userAgents.map(client),
    });
  };
}

import { create } from "@bufbuild/protobuf";
import {
  type StatsFigures as StatsFiguresMessage,
  StatsFiguresSchema,
  type StatsRequest,
  type StatsResponse,
  StatsResponseSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { histogramMax, histogramPercentile, histogramPercentiles } from "../domain/latency-histogram.js";
import { addFigures, noFigures, type StatsFigures } from "../domain/stats-figures.js";
import { planStats } from "../query/stats-plan.js";
import type { StatsClient, StatsRoute } from "../store/store.js";
import type { UnaryHandler } from "./call-context.js";
import type { ServiceDeps } from "./service-deps.js";

function figuresMessage(f: StatsFigures): StatsFiguresMessage {
  const [p50, p90, p99] = histogramPercentiles(f.latency, [50, 90, 99]);
  return create(StatsFiguresSchema, {
    requests: BigInt(f.requests),
    errors: BigInt(f.errors),
    bytesSent: BigInt(f.bytes),
    latencyP50: BigInt(p50!),
    latencyP90: BigInt(p90!),
    latencyP99: BigInt(p99!),
    latencyMax: BigInt(histogramMax(f.latency)),
  });
}

interface RouteTotal extends StatsRoute {
  p99: number;
}

/** By route, the overflow entry (no route) last. */
function byRoute(a: RouteTotal, b: RouteTotal): number {
  if (a.route === undefined || b.route === undefined) return (a.route === undefined ? 1 : 0) - (b.route === undefined ? 1 : 0);
  return a.route < b.route ? -1 : a.route > b.route ? 1 : 0;
}

const client = (c: StatsClient) => ({ name: c.name, requests: BigInt(c.requests), errors: BigInt(c.errors), maxError: BigInt(c.maxError) });

const seconds = (hour: number) => BigInt(hour) * 3600n;

/** Stats: requests, errors, bytes and latency per time bucket, route and status class, and top lists. */
export function createStatsHandler({ store, limits }: ServiceDeps): UnaryHandler<StatsRequest, StatsResponse> {
  return async (request, call) => {
    const plan = planStats(request, limits);
    call.authorize([plan.appId]);
    const result = await store.stats(plan, call.signal);
    const total = noFigures();
    for (const b of result.buckets) addFigures(total, b);
    const routes = result.routes.map((r) => ({ ...r, p99: histogramPercentile(r.latency, 99) }));
    const top = (order: (a: RouteTotal, b: RouteTotal) => number) =>
      [...routes]
        .sort((a, b) => order(a, b) || byRoute(a, b))
        .slice(0, plan.topN)
        .map((t) => ({ ...(t.route !== undefined ? { route: t.route } : {}), figures: figuresMessage(t) }));
    return create(StatsResponseSchema, {
      record: result.records.map((r) => ({
        startTime: seconds(r.startHour),
        endTime: seconds(r.endHour),
        ...(r.route !== undefined ? { route: r.route } : {}),
        statusClass: r.statusClass,
        ...(r.moduleId !== undefined ? { moduleId: r.moduleId, versionId: r.versionId } : {}),
        figures: figuresMessage(r),
      })),
      bucket: result.buckets.map((b) => ({
        startTime: seconds(b.startHour),
        endTime: seconds(b.endHour),
        figures: figuresMessage(b),
        classRequests: b.classRequests.map(BigInt),
      })),
      total: figuresMessage(total),
      ...(result.startHour !== undefined && result.endHour !== undefined
        ? { startTime: seconds(result.startHour), endTime: seconds(result.endHour) }
        : {}),
      topRouteByRequests: top((a, b) => b.requests - a.requests),
      topRouteByP99: top((a, b) => b.p99 - a.p99 || b.requests - a.requests),
      topClientIp: result.clientIps.map(client),
      topUserAgent: result.userAgents.map(client),
    });
  };
}

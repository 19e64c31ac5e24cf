import type { FinishedRequest } from "../store/store.js";
import { createCappedSeries } from "./capped-series.js";
import { type HistogramSeries, histogramBounds, histogramLines, newHistogramSeries, observe } from "./histogram-series.js";
import { familyHeader } from "./metric-text.js";

/**
 * OpenTelemetry's advised bucket bounds of `http.server.request.duration`,
 * in seconds (semantic conventions for HTTP metrics).
 */
export const durationBoundsSeconds = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10] as const;

/**
 * Bounds of `http.server.response.body.size`, in bytes. The conventions
 * advise none, and an SDK's default bounds (0 to 10,000) are made for
 * milliseconds: powers of ten from 100 B to 100 MB read an API's JSON and an
 * artifact's zip alike, in 8 buckets.
 */
export const sizeBoundsBytes = [100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8] as const;

/** The methods OpenTelemetry knows (RFC 9110 and PATCH); any other is `_OTHER`, as the conventions say. */
const knownMethods = new Set(["CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE"]);

export const durationName = "http_server_request_duration_seconds";
export const sizeName = "http_server_response_body_size_bytes";

/** The labels of the request metrics: reqlog's app, module and version, then OpenTelemetry's attributes as Prometheus names them. */
export const requestLabelNames = ["app", "module", "version", "http_route", "http_request_method", "http_response_status_code"] as const;
const routeLabel = requestLabelNames.indexOf("http_route");

export interface RequestMetricsOptions {
  /** Most series (label combinations) of one app with a route of their own; later ones count under http_route="other". */
  maxSeriesPerApp: number;
  /** Only these apps have request metrics (undefined: every app). */
  apps?: readonly string[];
  /** These apps have none. */
  skipApps?: readonly string[];
  /** Told of each request counted under http_route="other" for want of room. */
  overflowed(app: string): void;
}

export interface RequestMetrics {
  /** Counts finished requests (each once: the store tells of each once). */
  count(requests: readonly FinishedRequest[]): void;
  /** The two histogram families in the text format. */
  text(): string;
  /** The apps with series, and how many of each have a route of their own. */
  seriesByApp(): [app: string, series: number][];
}

interface RouteSeries {
  labels: string;
  duration: HistogramSeries;
  size: HistogramSeries;
}

const durations = histogramBounds(durationBoundsSeconds, 1e-6);
const sizes = histogramBounds(sizeBoundsBytes, 1);

/**
 * RED metrics of the apps' requests as logged (rate, errors, duration), as
 * OpenTelemetry's HTTP server metrics are named in Prometheus, so that
 * dashboards and rules written for an instrumented server fit: a request's
 * duration is its record's latency, its route the route Stats counts it
 * under, its size its response_size.
 */
export function createRequestMetrics(options: RequestMetricsOptions): RequestMetrics {
  const only = options.apps && new Set(options.apps);
  const skip = new Set(options.skipApps ?? []);
  const counted = new Map<string, boolean>();
  const isCounted = (app: string) => {
    let yes = counted.get(app);
    if (yes === undefined) counted.set(app, (yes = (only === undefined || only.has(app)) && !skip.has(app)));
    return yes;
  };
  const series = createCappedSeries<RouteSeries>({
    labelNames: requestLabelNames,
    routeLabel,
    maxSeriesPerApp: options.maxSeriesPerApp,
    make: (labels) => ({ labels, duration: newHistogramSeries(durations), size: newHistogramSeries(sizes) }),
    overflowed: options.overflowed,
  });
  const values: string[] = ["", "", "", "", "", ""];

  return {
    count(requests) {
      for (const { log, facts } of requests) {
        if (!isCounted(log.appId)) continue;
        values[0] = log.appId;
        values[1] = log.moduleId;
        values[2] = log.versionId;
        values[3] = facts.route;
        values[4] = knownMethods.has(log.method) ? log.method : "_OTHER";
        values[5] = String(log.status);
        const s = series.find(values);
        observe(s.duration, durations, facts.latencyUs);
        observe(s.size, sizes, facts.bytes);
      }
    },
    text() {
      let duration = familyHeader(durationName, "histogram", "Duration of HTTP server requests, from the request log: each finished request once.");
      let size = familyHeader(sizeName, "histogram", "Size of HTTP server response bodies, from the request log: each finished request once.");
      for (const s of series.all()) {
        duration += histogramLines(durationName, s.labels, s.duration, durations);
        size += histogramLines(sizeName, s.labels, s.size, sizes);
      }
      return duration + size;
    },
    seriesByApp: () => [...series.apps()].map((app) => [app, series.ownSeries(app)]),
  };
}

import type { Logger } from "pino";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import { Code } from "../reqlog-error.js";
import type { CallObserver } from "../service/call-outcome.js";
import type { FinishedRequest, NewLines, Store, WriteObserver } from "../store/store.js";
import { createLogMetrics } from "./log-metrics.js";
import type { LogMetricDefinition } from "./log-metrics-file.js";
import { createRequestMetrics, durationName } from "./request-metrics.js";

const codeNames = Object.fromEntries(Object.entries(Code).map(([name, code]) => [code, name])) as Record<number, string>;

/** What the metrics read from the running server when scraped. */
export interface MetricSources {
  openTails(): number;
  /** Bytes the store takes on disk, when the backend can tell. */
  storageBytes?(): Promise<number>;
}

/** The metrics of the apps' requests (request-metrics.ts) and the log-based ones (log-metrics.ts). */
export interface AppMetricsOptions {
  /** Count the apps' requests as OpenTelemetry's HTTP server metrics (default true; --no-request-metrics). */
  requests?: boolean;
  /** Most series of one app, per metric family, with a route of their own (--metrics-max-series-per-app). */
  maxSeriesPerApp: number;
  /** Only these apps have request metrics (undefined: every app). */
  apps?: readonly string[];
  /** These apps have none. */
  skipApps?: readonly string[];
  /** The counters of a --log-metrics file. */
  logMetrics?: readonly LogMetricDefinition[];
  /**
   * A request that ended (a line written) longer ago than this when it is
   * stored is not counted (ms; 0: every one): an import of last month's
   * access log must not page anyone now. Counted in reqlog_metrics_late_total.
   */
  maxAgeMs?: number;
  /** Milliseconds since the epoch (tests). */
  now?: () => number;
}

/** The default of --metrics-max-series-per-app: a forge's ~100 routes × methods × statuses × two versions, with room. */
export const defaultMaxSeriesPerApp = 2000;

/** The default of --metrics-max-age: records that arrive late from an SDK's buffer count; yesterday's imports do not. */
export const defaultMetricsMaxAge = "1h";

export interface ReqlogMetrics {
  registry: Registry;
  /** Every metric in Prometheus's text format: what /metrics serves. */
  scrape(): Promise<string>;
  /** Counts what the store commits: the request metrics and the log-based metrics (undefined: neither is on). */
  writes: WriteObserver | undefined;
  /** Counts calls on every transport (grpc_server_* as go-grpc-prometheus names them, labelled by transport). */
  observer: CallObserver;
  /** The store, counting the records and lines written and the records read. */
  instrument(store: Store): Store;
}

/**
 * The service's Prometheus metrics (prom-client): calls started, handled
 * (by code) and their duration for both transports; records and lines
 * written; records read; tails open; store size; and Node's process metrics.
 */
export function createMetrics(
  sources: MetricSources,
  apps: AppMetricsOptions = { maxSeriesPerApp: defaultMaxSeriesPerApp },
  logger?: Logger,
): ReqlogMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const callLabels = ["grpc_service", "grpc_method", "grpc_type", "transport"] as const;
  const started = new Counter({
    name: "grpc_server_started_total",
    help: "RPCs started on the server.",
    labelNames: callLabels,
    registers: [registry],
  });
  const handled = new Counter({
    name: "grpc_server_handled_total",
    help: "RPCs completed on the server, whatever their status.",
    labelNames: [...callLabels, "grpc_code"],
    registers: [registry],
  });
  const seconds = new Histogram({
    name: "grpc_server_handling_seconds",
    help: "How long RPCs took until the server sent their status.",
    labelNames: callLabels,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [registry],
  });
  const counter = (name: string, help: string) => new Counter({ name, help, registers: [registry] });
  const recordsWritten = counter("reqlog_records_written_total", "Request records stored (new or updated) by Write and Ingest.");
  const linesWritten = counter("reqlog_lines_written_total", "App log lines stored by Write, Ingest and Flush.");
  const rowsScanned = counter("reqlog_read_rows_scanned_total", "Rows Read scans examined (on backends that count them).");
  const recordsRead = counter("reqlog_read_records_total", "Request records returned by Read.");
  new Gauge({
    name: "reqlog_tails_open",
    help: "Tail calls open now.",
    registers: [registry],
    collect() {
      this.set(sources.openTails());
    },
  });
  const { storageBytes } = sources;
  if (storageBytes) {
    new Gauge({
      name: "reqlog_store_bytes",
      help: "Bytes the store takes on disk.",
      registers: [registry],
      async collect() {
        this.set(await storageBytes());
      },
    });
  }

  const overflow = new Counter({
    name: "reqlog_metrics_overflow_total",
    help: "Requests counted under http_route=\"other\" because their app had --metrics-max-series-per-app series of a metric already.",
    labelNames: ["app", "metric"],
    registers: [registry],
  });
  const warned = new Set<string>();
  const overflowed = (app: string, metric: string) => {
    overflow.inc({ app, metric });
    const key = `${app}\u0000${metric}`;
    if (warned.has(key)) return;
    warned.add(key);
    logger?.warn(
      { app, metric },
      `app ${app} has ${apps.maxSeriesPerApp} series of ${metric}, the limit metrics-max-series-per-app=${apps.maxSeriesPerApp}: ` +
        'its further routes count as http_route="other"',
    );
  };
  const requests = createRequestMetrics({
    maxSeriesPerApp: apps.maxSeriesPerApp,
    apps: apps.apps,
    skipApps: apps.skipApps,
    overflowed: (app) => overflowed(app, durationName),
  });
  const logMetrics = createLogMetrics(apps.logMetrics ?? [], { maxSeriesPerApp: apps.maxSeriesPerApp, overflowed });
  const late = new Counter({
    name: "reqlog_metrics_late_total",
    help: "Finished requests (kind=\"requests\") and app lines (kind=\"lines\") stored more than --metrics-max-age after they ended or were written: not counted in the request and log-based metrics.",
    labelNames: ["app", "kind"],
    registers: [registry],
  });
  const maxAgeMs = apps.maxAgeMs ?? 0;
  const countsRequests = apps.requests !== false;
  const now = apps.now ?? Date.now;
  /** The requests that ended within maxAgeMs of now (most do: filtered without a copy when all do). */
  const recentRequests = (finished: readonly FinishedRequest[]): readonly FinishedRequest[] => {
    const oldest = BigInt(now() - maxAgeMs) * 1000n;
    if (finished.every((f) => f.log.endTime >= oldest)) return finished;
    return finished.filter((f) => {
      if (f.log.endTime >= oldest) return true;
      late.inc({ app: f.log.appId, kind: "requests" });
      return false;
    });
  };
  const recentLines = (stored: readonly NewLines[]): NewLines[] => {
    const oldest = BigInt(now() - maxAgeMs) * 1000n;
    return stored.map(({ request, lines }) => {
      const kept = lines.filter((l) => l.time >= oldest);
      if (kept.length < lines.length) late.inc({ app: request.appId, kind: "lines" }, lines.length - kept.length);
      return { request, lines: kept };
    });
  };
  new Gauge({
    name: "reqlog_request_metrics_series",
    help: "Series of the request metrics with a route of their own, by app (bounded by --metrics-max-series-per-app).",
    labelNames: ["app"],
    registers: [registry],
    collect() {
      for (const [app, n] of requests.seriesByApp()) this.set({ app }, n);
    },
  });

  return {
    registry,
    async scrape() {
      return (await registry.metrics()) + (countsRequests ? requests.text() : "") + logMetrics.text();
    },
    writes:
      countsRequests || (apps.logMetrics ?? []).length > 0
        ? {
            finished(finished) {
              const recent = maxAgeMs > 0 ? recentRequests(finished) : finished;
              if (countsRequests) requests.count(recent);
              logMetrics.count(recent);
            },
            ...(logMetrics.countsLines ? { lines: (lines: readonly NewLines[]) => logMetrics.countLines(maxAgeMs > 0 ? recentLines(lines) : lines) } : {}),
          }
        : undefined,
    observer: {
      start(service, method, kind, transport) {
        const labels = { grpc_service: service, grpc_method: method, grpc_type: kind, transport };
        started.inc(labels);
        const stop = seconds.startTimer(labels);
        return (code) => {
          stop();
          handled.inc({ ...labels, grpc_code: codeNames[code] ?? String(code) });
        };
      },
    },
    instrument(store) {
      return {
        ...store,
        async write(records, signal) {
          const result = await store.write(records, signal);
          recordsWritten.inc(result.records);
          linesWritten.inc(result.lines);
          return result;
        },
        async ingest(records, lines, signal) {
          const result = await store.ingest(records, lines, signal);
          recordsWritten.inc(result.records);
          linesWritten.inc(result.lines);
          return result;
        },
        async flush(request, lines, signal) {
          const stored = await store.flush(request, lines, signal);
          linesWritten.inc(stored);
          return stored;
        },
        async read(plan, signal) {
          const result = await store.read(plan, signal);
          recordsRead.inc(result.records.length);
          rowsScanned.inc(result.scanned ?? 0);
          return result;
        },
      };
    },
  };
}

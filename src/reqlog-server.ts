import type { Logger } from "pino";
import { createAuthorizer } from "./auth/authorizer.js";
import type { TlsFiles } from "./config.js";
import { type RunningServer, type ServerOptions as GrpcServerOptions, startServer } from "./grpc/server.js";
import { connectRoutes } from "./http/connect-service.js";
import { type PageHandler, type RunningHttpServer, startHttpServer } from "./http/http-server.js";
import type { Limits } from "./limits.js";
import type { ConnectionLimits } from "./net/connection-guard.js";
import { type AlertmanagerAlerts, createAlertmanagerAlerts } from "./alerts/alertmanager-alerts.js";
import { type AppMetricsOptions, createMetrics, type ReqlogMetrics } from "./metrics/metrics.js";
import { otlpHttpPage } from "./http/otlp-http.js";
import type { OtlpMapping } from "./ingest/otlp-log-records.js";
import { noObserver } from "./service/call-outcome.js";
import { createLogService, type LogServiceCore } from "./service/log-service.js";
import type { Backend } from "./store/store.js";
import { createPreparePool, type PreparePool } from "./write/prepare-pool.js";
import { createPrivacy, defaultPrivacyOptions, type PrivacyOptions } from "./write/privacy.js";

export interface ReqlogServerOptions {
  /** HOST:PORT of the gRPC port (port 0 picks a free one). */
  listen: string;
  /** HOST:PORT of the HTTP port (Connect, gRPC-Web, gRPC; pages and /metrics); none when unset. */
  httpListen?: string;
  /** Serve /metrics on the HTTP port (default true). */
  metrics?: boolean;
  /** The request metrics and log-based metrics on /metrics (default: every app, the default cap, no log-based metrics). */
  appMetrics?: AppMetricsOptions;
  /** Alertmanager, whose alerts the Alerts RPC (and so the dashboard) shows; none when unset. */
  alertmanager?: { url: string; pollIntervalMs: number };
  /** Pages served on the HTTP port besides the RPCs and /metrics (the dashboard). */
  pages?: PageHandler[];
  limits: Limits;
  /** Connections held on each port, their timeouts and streams per connection (defaults when unset). */
  connections?: ConnectionLimits;
  /** Redaction and IP anonymisation of what is written (default: the built-in redaction, IPs as sent). */
  privacy?: PrivacyOptions;
  logger: Logger;
  shutdownTimeoutMs: number;
  /** TLS for the gRPC port; plaintext when unset. */
  credentials?: GrpcServerOptions["credentials"];
  /** TLS files for the HTTP port (the same as the gRPC port's). */
  tls?: TlsFiles;
  /**
   * Why every call needs a token even while none is active (the server
   * listens beyond loopback): it then never serves calls without one.
   */
  tokensRequired?: string;
  /** The rate limiter's clock (ms), for tests. */
  monotonicNow?: () => number;
  /** Which resource attributes name the app, version and module of OTLP log records. */
  otlp?: OtlpMapping;
  /**
   * Threads that decode and validate large Write and Ingest requests
   * arriving on the gRPC port (default 0: the main thread does it).
   */
  prepareWorkers?: number;
}

export interface ReqlogServer {
  grpc: RunningServer;
  /** The HTTP port, when one was asked for. */
  http: RunningHttpServer | undefined;
  service: LogServiceCore;
  metrics: ReqlogMetrics | undefined;
  /** The threads that decode and validate large Writes and Ingest batches, when there are any. */
  prepare: PreparePool | undefined;
  /** Stops serving (calls drain, then are cut off at the shutdown timeout); the backend stays open. */
  shutdown(): Promise<void>;
}

/**
 * The service on a backend, served on its transports: what `reqlog serve`,
 * the tests and the benchmarks start, wired the same way everywhere. Both
 * ports serve the same handlers: one core, any transport.
 */
export async function startReqlogServer(backend: Backend, options: ReqlogServerOptions): Promise<ReqlogServer> {
  const { logger, limits } = options;
  let tails = () => 0;
  const metrics =
    options.httpListen !== undefined && options.metrics !== false
      ? createMetrics({ openTails: () => tails(), storageBytes: backend.storageBytes?.bind(backend) }, options.appMetrics, logger)
      : undefined;
  const store = metrics ? metrics.instrument(backend.store) : backend.store;
  // The request metrics count what the store commits; the backend outlives the server (it is closed after).
  const serving = new AbortController();
  if (metrics?.writes) backend.store.observeWrites(metrics.writes, serving.signal);
  const auth = createAuthorizer(backend.tokens, {
    callsPerSecond: limits.rateLimit,
    now: options.monotonicNow,
    tokensRequired: options.tokensRequired,
    warn: (message) => logger.warn(message),
  });
  const prepareWorkers = options.prepareWorkers ?? 0;
  const privacyOptions = options.privacy ?? defaultPrivacyOptions;
  const privacy = createPrivacy(privacyOptions);
  const prepare = prepareWorkers > 0 ? createPreparePool(prepareWorkers, limits, privacyOptions) : undefined;
  const alerts: AlertmanagerAlerts | undefined =
    options.alertmanager && createAlertmanagerAlerts({ ...options.alertmanager, logger });
  const service = createLogService({ store, statuses: backend.statuses, limits, privacy, auth, otlp: options.otlp, prepare, alerts,
    audit: (message, fields) => logger.info(fields, message),
  });
  tails = service.tails.open;
  const observer = metrics?.observer ?? noObserver;
  const grpc = await startServer(service, {
    listen: options.listen,
    shutdownTimeoutMs: options.shutdownTimeoutMs,
    logger,
    credentials: options.credentials,
    connections: options.connections,
    observer,
  });
  let http: RunningHttpServer | undefined;
  if (options.httpListen !== undefined) {
    const pages: PageHandler[] = [];
    if (metrics) {
      pages.push(async (request, response) => {
        if (request.url !== "/metrics") return false;
        const text = await metrics.scrape();
        response.writeHead(200, { "content-type": metrics.registry.contentType });
        response.end(text);
        return true;
      });
    }
    pages.push(otlpHttpPage(service, { logger, observer, maxBytes: limits.maxMessageBytes }));
    pages.push(...(options.pages ?? []));
    http = await startHttpServer({
      listen: options.httpListen,
      routes: connectRoutes(service, logger, observer),
      pages,
      readMaxBytes: limits.maxMessageBytes,
      connections: options.connections,
      tls: options.tls,
      logger,
    }).catch(async (err: unknown) => {
      await grpc.shutdown();
      alerts?.close();
      serving.abort();
      throw err;
    });
  }
  return {
    grpc,
    http,
    service,
    metrics,
    prepare,
    async shutdown() {
      await Promise.all([grpc.shutdown(), http?.close(options.shutdownTimeoutMs)]);
      alerts?.close();
      serving.abort();
      await prepare?.close();
    },
  };
}

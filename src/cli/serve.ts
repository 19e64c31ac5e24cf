import { systemClock } from "../clock.js";
import { isLoopback, type ServeConfig } from "../config.js";
import { serverCredentials } from "../grpc/tls.js";
import { dashboardPages } from "../http/dashboard-pages.js";
import { createLogger } from "../logger.js";
import { startReqlogServer } from "../reqlog-server.js";
import { startHousekeeping } from "../store/housekeeping.js";
import { openBackend, storeFlags } from "./open-backend.js";

/** `reqlog serve`: open the backend, serve until SIGTERM/SIGINT, then shut down gracefully. */
export async function serve(config: ServeConfig): Promise<void> {
  const logger = createLogger(config.logLevel);
  const credentials = serverCredentials(config.tls);
  const backend = await openBackend({ ...config, requestLines: config.limits });
  const tokensConfigured = await backend.tokens.anyActive();
  const remote = [config.listen, config.httpListen].find((listen) => listen !== undefined && !isLoopback(listen));
  if (remote !== undefined && !tokensConfigured) {
    if (!config.allowRemoteWithoutAuth) {
      await backend.close();
      throw new Error(
        `refusing to listen on ${remote}: a non-loopback address needs access tokens ` +
          `(create one with: reqlog token create ${storeFlags(config)} --scope write:logs); ` +
          "listen on 127.0.0.1, or pass --allow-remote-without-auth to serve anyone who can connect",
      );
    }
    logger.warn(
      { listen: remote },
      "SERVING WITHOUT AUTHENTICATION on a non-loopback address: anyone who can connect can read and write all logs",
    );
  }
  // Reached only with a token, or with the opt-out: a remote server without the opt-out needs tokens for good.
  const tokensRequired = remote !== undefined && !config.allowRemoteWithoutAuth ? `it listens on ${remote}, not loopback` : undefined;
  const server = await startReqlogServer(backend, {
    tokensRequired,
    listen: config.listen,
    httpListen: config.httpListen,
    metrics: config.metrics,
    appMetrics: config.appMetrics,
    alertmanager: config.alertmanagerUrl === undefined ? undefined : { url: config.alertmanagerUrl, pollIntervalMs: config.alertmanagerPollMs },
    pages: config.httpListen !== undefined ? [dashboardPages()] : undefined,
    tls: config.tls,
    limits: config.limits,
    connections: config.connections,
    privacy: config.privacy,
    otlp: config.otlp,
    shutdownTimeoutMs: config.shutdownTimeoutMs,
    logger,
    credentials,
    prepareWorkers: config.prepareWorkers,
  }).catch(async (err: unknown) => {
    await backend.close();
    throw err;
  });

  const housekeeping = startHousekeeping(backend.maintenance, {
    retentionMs: config.retentionMs,
    intervalMs: 60_000,
    now: systemClock,
    logger,
  });

  const stop = (signal: string) => {
    logger.info({ signal, timeoutMs: config.shutdownTimeoutMs }, "shutting down");
    housekeeping
      .stop()
      .then(() => server.shutdown())
      .then(() => backend.close())
      .then(
        () => {
          logger.info("stopped");
          process.exit(0);
        },
        (err: unknown) => {
          logger.error({ err }, "shutdown failed");
          process.exit(1);
        },
      );
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
  // Announced only once the signals are handled: whoever waits for this line
  // may send SIGTERM at once.
  logger.info(
    {
      address: server.grpc.address,
      http: server.http?.address ?? "off",
      store:
        config.store === "clickhouse"
          ? `clickhouse ${config.clickhouse.url}/${config.clickhouse.database}${config.clickhouse.cluster ? ` on cluster ${config.clickhouse.cluster}` : ""}`
          : "sqlite",
      db: config.store === "sqlite" ? config.db : undefined,
      sync: config.sync,
      retentionMs: config.retentionMs,
      tls: config.tls.cert !== undefined,
      tokens: tokensConfigured,
      redaction: config.privacy.defaultRedaction ? "default" : "off",
      redactParams: config.privacy.redactParams.length > 0 ? config.privacy.redactParams : undefined,
      redactPatterns: config.privacy.redactPatterns.length || undefined,
      anonymizeIp: config.privacy.anonymizeIp,
    },
    "reqlog serving",
  );
}

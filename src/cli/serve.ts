import { createAuthorizer } from "../auth/authorizer.js";
import { createTokenStore } from "../auth/token-store.js";
import { systemClock } from "../clock.js";
import { isLoopback, type ServeConfig } from "../config.js";
import { startServer } from "../grpc/server.js";
import { serverCredentials } from "../grpc/tls.js";
import { createLogger } from "../logger.js";
import { startHousekeeping } from "../store/housekeeping.js";
import { openDatabase } from "../store/sqlite/open-database.js";
import { createSqliteStore } from "../store/sqlite/sqlite-store.js";

/** `reqlog serve`: open the database, serve until SIGTERM/SIGINT, then shut down gracefully. */
export async function serve(config: ServeConfig): Promise<void> {
  const logger = createLogger(config.logLevel);
  const credentials = serverCredentials(config.tls);
  const db = openDatabase({ path: config.db, sync: config.sync });
  const tokens = createTokenStore(db, systemClock);
  if (!isLoopback(config.listen) && !tokens.anyActive()) {
    if (!config.allowRemoteWithoutAuth) {
      db.close();
      throw new Error(
        `refusing to listen on ${config.listen}: a non-loopback address needs access tokens ` +
          `(create one with: reqlog token create --db ${config.db} --scope write:logs); ` +
          "listen on 127.0.0.1, or pass --allow-remote-without-auth to serve anyone who can connect",
      );
    }
    logger.warn(
      { listen: config.listen },
      "SERVING WITHOUT AUTHENTICATION on a non-loopback address: anyone who can connect can read and write all logs",
    );
  }
  const store = createSqliteStore(db, systemClock, { readWorkers: config.readWorkers });
  const auth = createAuthorizer(tokens, { callsPerSecond: config.limits.rateLimit });
  const server = await startServer(
    { store, limits: config.limits, auth },
    { listen: config.listen, shutdownTimeoutMs: config.shutdownTimeoutMs, logger, credentials },
  ).catch(async (err: unknown) => {
    await store.close();
    throw err;
  });

  const housekeeping = startHousekeeping(store, {
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
      address: server.address,
      db: config.db,
      sync: config.sync,
      retentionMs: config.retentionMs,
      tls: config.tls.cert !== undefined,
      tokens: tokens.anyActive(),
    },
    "reqlog serving",
  );
}

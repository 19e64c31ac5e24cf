import type { ServerCredentials } from "@grpc/grpc-js";
import type { Logger } from "pino";
import { createAuthorizer } from "./auth/authorizer.js";
import { type RunningServer, startServer } from "./grpc/server.js";
import type { Limits } from "./limits.js";
import { createLogService, type LogServiceCore } from "./service/log-service.js";
import type { Backend } from "./store/store.js";

export interface ReqlogServerOptions {
  /** HOST:PORT of the gRPC port (port 0 picks a free one). */
  listen: string;
  limits: Limits;
  logger: Logger;
  shutdownTimeoutMs: number;
  /** TLS for the gRPC port; plaintext when unset. */
  credentials?: ServerCredentials;
  /** The rate limiter's clock (ms), for tests. */
  monotonicNow?: () => number;
}

export interface ReqlogServer {
  grpc: RunningServer;
  service: LogServiceCore;
  /** Stops serving (calls drain, then are cut off at the shutdown timeout); the backend stays open. */
  shutdown(): Promise<void>;
}

/**
 * The service on a backend, served on its transports: what `reqlog serve`,
 * the tests and the benchmarks start, wired the same way everywhere.
 */
export async function startReqlogServer(backend: Backend, options: ReqlogServerOptions): Promise<ReqlogServer> {
  const auth = createAuthorizer(backend.tokens, { callsPerSecond: options.limits.rateLimit, now: options.monotonicNow });
  const service = createLogService({ store: backend.store, statuses: backend.statuses, limits: options.limits, auth });
  const grpc = await startServer(service, {
    listen: options.listen,
    shutdownTimeoutMs: options.shutdownTimeoutMs,
    logger: options.logger,
    credentials: options.credentials,
  });
  return { grpc, service, shutdown: () => grpc.shutdown() };
}

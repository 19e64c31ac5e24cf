import { createServer as createNetServer } from "node:net";
import { type Server as GrpcServer, Server, ServerCredentials } from "@grpc/grpc-js";
import { acceptConnections, type ConnectionLimits, defaultConnectionLimits } from "../net/connection-guard.js";
import { listenOn } from "../net/listen-on.js";
import { requestTimeoutInterceptor } from "./request-timeout.js";
import { HealthImplementation } from "grpc-health-check";
import type { Logger } from "pino";
import { allObservers, type CallObserver, noObserver } from "../service/call-outcome.js";
import type { LogServiceCore } from "../service/log-service.js";
import { LogService, LogsService, otlpMethodAccess } from "../service/log-service.js";
import { type CallCounter, createCallCounter, grpcImplementation, serviceImplementation } from "./adapters.js";
import { addReflection } from "./reflection.js";
import { serverDefinition } from "./service-definition.js";

export interface ServerOptions {
  /** HOST:PORT; port 0 picks a free port. */
  listen: string;
  /** How long in-flight calls may run on after a shutdown starts before they are cut off. */
  shutdownTimeoutMs: number;
  logger: Logger;
  /** Plaintext when unset. */
  credentials?: ServerCredentials;
  /** Sees every call start and end (metrics). */
  observer?: CallObserver;
  /** Connections held, timeouts and streams per connection (defaultConnectionLimits when unset). */
  connections?: ConnectionLimits;
}

export interface RunningServer {
  /** The bound address, HOST:PORT. */
  address: string;
  port: number;
  /**
   * Health goes NOT_SERVING, new calls are refused, in-flight calls finish
   * (cut off after shutdownTimeoutMs). The store is the caller's to close.
   */
  shutdown(): Promise<void>;
  /** Live figures of the server. */
  stats(): { openTails: number };
}

/** The health service names whose status the server reports. */
const healthNames = ["", LogService.typeName, LogsService.typeName];

/** Builds the gRPC server, binds it and starts serving. */
export async function startServer(core: LogServiceCore, options: ServerOptions): Promise<RunningServer> {
  const { logger } = options;
  const limits = options.connections ?? defaultConnectionLimits;
  const server = new Server({
    // Messages up to twice the limit reach the service's own check, which
    // answers with a message naming the limit; beyond that grpc-js refuses
    // them before buffering them.
    "grpc.max_receive_message_length": core.limits.maxMessageBytes * 2,
    // A connection with no call in flight (one that sent its preface and
    // nothing more, too) is closed; streams per connection are bounded.
    "grpc.max_connection_idle_ms": limits.idleTimeoutMs,
    "grpc.max_concurrent_streams": limits.maxStreamsPerConnection,
    interceptors: [requestTimeoutInterceptor(limits.requestTimeoutMs)],
  });
  const calls = createCallCounter();
  const observer = allObservers(calls, options.observer ?? noObserver);
  server.addService(
    serverDefinition(LogService, core.limits.maxMessageBytes, new Set(Object.keys(core.decoders))),
    grpcImplementation(core, logger, observer),
  );
  // OTLP/gRPC log exporters (OpenTelemetry SDKs, the Collector) send to the same port.
  server.addService(
    serverDefinition(LogsService, core.limits.maxMessageBytes),
    serviceImplementation(LogsService, core.otlp, otlpMethodAccess, core.auth, logger, observer),
  );
  const health = new HealthImplementation(Object.fromEntries(healthNames.map((n) => [n, "SERVING"])));
  health.addToServer(server as unknown as Parameters<typeof health.addToServer>[0]);
  addReflection(server);

  // The port's own listener, which caps connections and drops silent ones
  // (grpc-js has neither), hands each connection to grpc-js once it has
  // sent its first bytes.
  const injector = server.createConnectionInjector(options.credentials ?? ServerCredentials.createInsecure());
  const listener = createNetServer();
  acceptConnections(listener, limits, (socket) => injector.injectConnection(socket));
  const port = await listenOn(listener, options.listen, "");
  const host = options.listen.slice(0, options.listen.lastIndexOf(":"));
  const address = `${host}:${port}`;

  let stopping: Promise<void> | undefined;
  return {
    address,
    port,
    stats: () => ({ openTails: core.tails.open() }),
    shutdown() {
      stopping ??= (async () => {
        for (const name of healthNames) health.setStatus(name, "NOT_SERVING");
        core.tails.endAll();
        listener.close();
        await drain(server, calls, options.shutdownTimeoutMs, logger);
      })();
      return stopping;
    },
  };
}

/** How long replies get to go out once the last call has settled, before idle connections are cut. */
const idleGraceMs = 500;

/**
 * Lets in-flight calls finish, then closes every connection. grpc-js's
 * tryShutdown also waits for each HTTP/2 session to close, and a session
 * whose client has just gone away may never report closing (grpc-node
 * #1458): so once no LogService call is left, and its reply has had a
 * moment to go out, the remaining connections are cut. Calls still running
 * at the timeout are cut off, with a warning.
 */
async function drain(server: GrpcServer, calls: CallCounter, timeoutMs: number, logger: Logger): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const closed = new Promise<"closed">((resolve) => server.tryShutdown(() => resolve("closed")));
  const idle = calls.idle().then(() => new Promise<"idle">((resolve) => setTimeout(() => resolve("idle"), idleGraceMs)));
  const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), timeoutMs)));
  const outcome = await Promise.race([closed, idle, late]);
  clearTimeout(timer);
  if (outcome === "closed") return;
  if (outcome === "late") logger.warn({ timeoutMs }, "in-flight calls still running at the shutdown timeout; cutting them off");
  server.forceShutdown();
}

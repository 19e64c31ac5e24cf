import { type Server as GrpcServer, Server, ServerCredentials } from "@grpc/grpc-js";
import { HealthImplementation } from "grpc-health-check";
import type { Logger } from "pino";
import type { LogServiceCore } from "../service/log-service.js";
import { LogService } from "../service/log-service.js";
import { grpcImplementation } from "./adapters.js";
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
const healthNames = ["", LogService.typeName];

/** Builds the gRPC server, binds it and starts serving. */
export async function startServer(core: LogServiceCore, options: ServerOptions): Promise<RunningServer> {
  const { logger } = options;
  const server = new Server({
    // Messages up to twice the limit reach the service's own check, which
    // answers with a message naming the limit; beyond that grpc-js refuses
    // them before buffering them.
    "grpc.max_receive_message_length": core.limits.maxMessageBytes * 2,
  });
  server.addService(serverDefinition(LogService, core.limits.maxMessageBytes), grpcImplementation(core, logger));
  const health = new HealthImplementation(Object.fromEntries(healthNames.map((n) => [n, "SERVING"])));
  health.addToServer(server as unknown as Parameters<typeof health.addToServer>[0]);
  addReflection(server);

  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(options.listen, options.credentials ?? ServerCredentials.createInsecure(), (err, bound) =>
      err ? reject(new Error(`cannot listen on ${options.listen}: ${err.message}`, { cause: err })) : resolve(bound),
    ),
  );
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
        await drain(server, options.shutdownTimeoutMs, logger);
      })();
      return stopping;
    },
  };
}

async function drain(server: GrpcServer, timeoutMs: number, logger: Logger): Promise<void> {
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      logger.warn({ timeoutMs }, "in-flight calls still running at the shutdown timeout; cutting them off");
      server.forceShutdown();
      resolve();
    }, timeoutMs);
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

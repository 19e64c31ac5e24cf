import { type Server as GrpcServer, Server, ServerCredentials } from "@grpc/grpc-js";
import { HealthImplementation } from "grpc-health-check";
import type { Logger } from "pino";
import { LogService } from "../../gen/reqlog/v1/log_service_pb.js";
import { createFlushHandler } from "../service/flush.js";
import type { ServiceDeps } from "../service/handler.js";
import { createReadHandler } from "../service/read.js";
import { createListStatusHandler } from "../service/list-status.js";
import { createIngestHandler } from "../service/ingest.js";
import { createTailService } from "../service/tail.js";
import { createUsageHandler } from "../service/usage.js";
import { createSetStatusHandler } from "../service/set-status.js";
import { createWriteHandler } from "../service/write.js";
import { addReflection } from "./reflection.js";
import { serverDefinition } from "./service-definition.js";
import { serverStream } from "./server-stream.js";
import { unary } from "./unary.js";

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
   * (cut off after shutdownTimeoutMs), then the store is closed.
   */
  shutdown(): Promise<void>;
  /** Live figures of the server (open tails and what they have queued). */
  stats(): { openTails: number; tailMaxUnsent: number };
}

/** The health service names whose status the server reports. */
const healthNames = ["", LogService.typeName];

/** Builds the gRPC server, binds it and starts serving. */
export async function startServer(deps: ServiceDeps, options: ServerOptions): Promise<RunningServer> {
  const { logger } = options;
  const server = new Server({
    // Messages up to twice the limit reach the service's own check, which
    // answers with a message naming the limit; beyond that grpc-js refuses
    // them before buffering them.
    "grpc.max_receive_message_length": deps.limits.maxMessageBytes * 2,
  });
  const tails = createTailService(deps);
  server.addService(serverDefinition(LogService, deps.limits.maxMessageBytes), {
    flush: unary("Flush", createFlushHandler(deps), logger),
    setStatus: unary("SetStatus", createSetStatusHandler(deps), logger),
    read: unary("Read", createReadHandler(deps), logger),
    usage: unary("Usage", createUsageHandler(deps), logger),
    write: unary("Write", createWriteHandler(deps), logger),
    listStatus: unary("ListStatus", createListStatusHandler(deps), logger),
    tail: serverStream("Tail", tails.follow, logger),
    ingest: createIngestHandler(deps, logger),
  });
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
    stats() {
      const t = tails.stats();
      return { openTails: t.open, tailMaxUnsent: t.maxUnsent };
    },
    shutdown() {
      stopping ??= (async () => {
        for (const name of healthNames) health.setStatus(name, "NOT_SERVING");
        tails.endAll();
        await drain(server, options.shutdownTimeoutMs, logger);
        await deps.store.close();
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

import { type LogServiceClient, createLogServiceClient } from "../../src/client/log-service-client.js";
import { defaultLimits, type Limits } from "../../src/limits.js";
import { createLogger } from "../../src/logger.js";
import { startReqlogServer } from "../../src/reqlog-server.js";
import type { SqliteBackend } from "../../src/store/sqlite/sqlite-backend.js";

/** A reqlog server in the bench's process, with a client of it. */
export interface BenchServer {
  backend: SqliteBackend;
  /** The bound address, HOST:PORT. */
  address: string;
  /** The HTTP port's address, when asked for. */
  httpAddress: string | undefined;
  client: LogServiceClient;
  /** Closes the client, stops serving, then closes the backend (as `reqlog serve` does on SIGTERM). */
  close(): Promise<void>;
}

/**
 * Serves a backend on 127.0.0.1:0, wired as `reqlog serve` wires it
 * (startReqlogServer; no tokens, so the server is open on loopback), with
 * its log silenced and `limits` over the defaults.
 */
export async function startBenchServer(
  backend: SqliteBackend,
  limits: Partial<Limits> = {},
  options: { http?: boolean } = {},
): Promise<BenchServer> {
  const server = await startReqlogServer(backend, {
    listen: "127.0.0.1:0",
    httpListen: options.http ? "127.0.0.1:0" : undefined,
    limits: { ...defaultLimits, ...limits },
    logger: createLogger("silent"),
    shutdownTimeoutMs: 1000,
  });
  const address = server.grpc.address;
  const client = createLogServiceClient({ server: address });
  return {
    backend,
    address,
    httpAddress: server.http?.address,
    client,
    async close() {
      client.close();
      await server.shutdown();
      await backend.close();
    },
  };
}

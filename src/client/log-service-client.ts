import { readFileSync } from "node:fs";
import type { SecureClientSessionOptions } from "node:http2";
import { type Client, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { LogService } from "../../gen/reqlog/v1/log_service_pb.js";

/** How a client reaches a reqlog server. */
export interface ClientOptions {
  /** HOST:PORT, or a URL (http://… or https://…). */
  server: string;
  /** Bearer token sent with every call (REQLOG_TOKEN for the CLI). */
  token?: string;
  /** TLS: true for the system's roots, a CA file (PEM), or Node's TLS options (client certificates). */
  tls?: boolean | string | SecureClientSessionOptions;
  /** Run around every call (the tests check replies as a strict proto2 client). */
  interceptors?: Interceptor[];
  /** The service's schema; the generated LogService unless a test swaps in a lenient twin. */
  service?: typeof LogService;
}

/** A typed LogService client (methods named as the generated service names them), with its connection. */
export type LogServiceClient = Client<typeof LogService> & {
  /** Closes the HTTP/2 connection. */
  close(): void;
};

function baseUrl(server: string, tls: boolean): string {
  if (/^https?:\/\//.test(server)) return server;
  return `${tls ? "https" : "http"}://${server}`;
}

function tlsOptions(tls: ClientOptions["tls"]): SecureClientSessionOptions | undefined {
  if (!tls) return undefined;
  if (tls === true) return {};
  if (typeof tls === "string") return { ca: readFileSync(tls) };
  return tls;
}

/**
 * A client of the LogService over gRPC (HTTP/2), typed from the generated
 * service: what the CLI, the tests and the benchmarks call the server with.
 */
export function createLogServiceClient(options: ClientOptions): LogServiceClient {
  const url = baseUrl(options.server, Boolean(options.tls));
  const interceptors: Interceptor[] = [...(options.interceptors ?? [])];
  if (options.token !== undefined) {
    const bearer = `Bearer ${options.token}`;
    interceptors.unshift((next) => (req) => {
      if (!req.header.has("authorization")) req.header.set("authorization", bearer);
      return next(req);
    });
  }
  const sessions = new Http2SessionManager(url, {}, tlsOptions(options.tls));
  const transport = createGrpcTransport({ baseUrl: url, sessionManager: sessions, interceptors });
  const client = createClient(options.service ?? LogService, transport);
  return Object.assign(client, { close: () => sessions.abort() });
}

/** The message of a failed call, for a CLI error line. */
export function callFailure(err: unknown): string {
  if (err instanceof ConnectError) return err.rawMessage || `status ${err.code}`;
  return err instanceof Error ? err.message : String(err);
}

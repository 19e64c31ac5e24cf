import { readFileSync } from "node:fs";
import type { SecureClientSessionOptions } from "node:http2";
import { type Client, Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { LogService } from "../../gen/reqlog/v1/log_service_pb.js";
import { createServerPool } from "./server-pool.js";

/** How a client reaches a reqlog server. */
export interface ClientOptions {
  /**
   * HOST:PORT, or a URL (http://… or https://…); several servers as a list,
   * or one name that resolves to several addresses: calls go to them in turn
   * (server-pool.ts); gRPC's `dns:///name:port`, or `dns://DNS-SERVER/name:port`
   * to ask that DNS server rather than the system's resolver.
   */
  server: string | readonly string[];
  /** Bearer token sent with every call (REQLOG_TOKEN for the CLI). */
  token?: string;
  /** TLS: true for the system's roots, a CA file (PEM), or Node's TLS options (client certificates). */
  tls?: boolean | string | SecureClientSessionOptions;
  /** Call metadata sent with every call that does not set the same key itself (the SDK's app, version, …). */
  headers?: Record<string, string>;
  /** The deadline of every unary call that does not give its own `timeoutMs` (streams have none by default). */
  timeoutMs?: number;
  /** PING the server after this long without traffic, and drop a connection that does not answer (dead peers). */
  keepaliveMs?: number;
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
  return `${tls ? "https" : "http"}://${dnsTarget(server)?.name ?? server}`;
}

/** gRPC's `dns:[//DNS-SERVER/]HOST:PORT` target: the name, and the DNS server when it names one. */
function dnsTarget(server: string): { name: string; dnsServer?: string } | undefined {
  const target = /^dns:(?:\/\/([^/]*)\/)?(.+)$/.exec(server);
  if (!target) return undefined;
  return target[1] ? { name: target[2]!, dnsServer: target[1] } : { name: target[2]! };
}

function tlsOptions(tls: ClientOptions["tls"]): SecureClientSessionOptions | undefined {
  if (!tls) return undefined;
  if (tls === true) return {};
  if (typeof tls === "string") return { ca: readFileSync(tls) };
  return tls;
}

/** Sets each of `headers` on a call that does not set it itself. */
function defaultHeaders(headers: Record<string, string>): Interceptor {
  const entries = Object.entries(headers);
  return (next) => (req) => {
    for (const [key, value] of entries) if (!req.header.has(key)) req.header.set(key, value);
    return next(req);
  };
}

/**
 * Gives every unary method of `client` a default deadline. Connect's own
 * defaultTimeoutMs would also cut long-lived streams (Ingest, Tail), and a
 * call cannot opt out of it, so the unary methods are wrapped instead.
 */
function withUnaryDeadline(client: Client<typeof LogService>, service: typeof LogService, timeoutMs: number): void {
  const methods = client as unknown as Record<string, (request: unknown, options?: { timeoutMs?: number }) => unknown>;
  for (const method of service.methods) {
    if (method.methodKind !== "unary") continue;
    const call = methods[method.localName]!;
    methods[method.localName] = (request, options) =>
      call(request, options?.timeoutMs !== undefined ? options : { ...options, timeoutMs });
  }
}

/**
 * A client of the LogService over gRPC (HTTP/2), typed from the generated
 * service: what the CLI, the SDK, the tests and the benchmarks call the
 * server with.
 */
export function createLogServiceClient(options: ClientOptions): LogServiceClient {
  const servers = typeof options.server === "string" ? [options.server] : options.server;
  if (servers.length === 0) throw new Error("no reqlog server given: name at least one (HOST:PORT)");
  const interceptors: Interceptor[] = [...(options.interceptors ?? [])];
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  if (Object.keys(headers).length > 0) interceptors.unshift(defaultHeaders(headers));
  const keepalive = options.keepaliveMs === undefined ? {} : { pingIntervalMs: options.keepaliveMs, pingTimeoutMs: options.keepaliveMs };
  const tls = tlsOptions(options.tls);
  const dns = servers.length === 1 ? dnsTarget(servers[0]!) : undefined;
  const pool = createServerPool(
    servers.map((server) => baseUrl(server, Boolean(options.tls))),
    (url, servername) => {
      const sessions = new Http2SessionManager(url, keepalive, tls && servername !== undefined ? { servername, ...tls } : tls);
      return { transport: createGrpcTransport({ baseUrl: url, sessionManager: sessions, interceptors }), close: () => sessions.abort() };
    },
    dns ? { dns: dns.dnsServer === undefined ? {} : { server: dns.dnsServer } } : {},
  );
  const service = options.service ?? LogService;
  const client = createClient(service, pool.transport);
  if (options.timeoutMs !== undefined) withUnaryDeadline(client, service, options.timeoutMs);
  return Object.assign(client, { close: () => pool.close() });
}

/**
 * The message of a failed call, for a CLI error line, in the CLI's terms: the server names call metadata (its
 * callers are grpcurl and SDKs too), the CLI names its own flag and variable.
 */
export function callFailure(err: unknown): string {
  if (err instanceof ConnectError) {
    if (err.code === Code.Unauthenticated) {
      const reason = err.rawMessage.startsWith("missing access token") ? "this server needs an access token" : err.rawMessage;
      return `${reason}: give one with --token or REQLOG_TOKEN`;
    }
    if (err.code === Code.PermissionDenied) return `${err.rawMessage} (the token given with --token or REQLOG_TOKEN)`;
    return err.rawMessage || `status ${Code[err.code]}`;
  }
  const message = err instanceof Error ? err.message : String(err);
  // No server at the address: say which setting names it.
  return /ECONNREFUSED|ENOTFOUND|EHOSTUNREACH/.test(message) ? `${message} (is reqlog serving there? --server or REQLOG_SERVER)` : message;
}

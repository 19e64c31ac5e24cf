import { readFileSync } from "node:fs";
import { createServer as createHttp1Server } from "node:http";
import { createServer as createH2cServer, createSecureServer } from "node:http2";
import { createServer as createNetServer, type Server as NetServer, type Socket } from "node:net";
import type { ConnectRouter } from "@connectrpc/connect";
import { type ConnectNodeAdapterOptions, connectNodeAdapter } from "@connectrpc/connect-node";
import type { Logger } from "pino";
import type { TlsFiles } from "../config.js";
import {
  acceptConnections,
  type ConnectionLimits,
  defaultConnectionLimits,
  guardHttp2Sessions,
  http1Timeouts,
  http2Settings,
} from "../net/connection-guard.js";
import { listenOn } from "../net/listen-on.js";
import { createRedactor } from "../write/redactor.js";

const logRedactor = createRedactor({ defaults: true, params: [], patterns: [] });

type Fallback = NonNullable<ConnectNodeAdapterOptions["fallback"]>;
/** A request on the HTTP port (HTTP/1.1 or HTTP/2), as Connect's adapter hands it on. */
export type HttpRequest = Parameters<Fallback>[0];
export type HttpResponse = Parameters<Fallback>[1];
/** Serves a request that is not an RPC (a page, /metrics); returns false to let the next one try. */
export type PageHandler = (request: HttpRequest, response: HttpResponse) => boolean | Promise<boolean>;

export interface HttpServerOptions {
  /** HOST:PORT; port 0 picks a free port. */
  listen: string;
  routes: (router: ConnectRouter) => void;
  /** Handlers of what is not an RPC, tried in order; then 404. */
  pages?: PageHandler[];
  /** Largest request message (bytes) Connect reads. */
  readMaxBytes: number;
  /** As on the gRPC port: plaintext without cert and key. */
  tls?: TlsFiles;
  logger: Logger;
  /** Connections held, timeouts and streams per connection (defaultConnectionLimits when unset). */
  connections?: ConnectionLimits;
}

export interface RunningHttpServer {
  address: string;
  port: number;
  /** Stops accepting, lets requests in flight finish (cut off after `timeoutMs`), closes every connection. */
  close(timeoutMs: number): Promise<void>;
}

const http2Preface = "PRI * HTTP/2.0";

/**
 * The HTTP port: the LogService over Connect, gRPC-Web and gRPC, and pages
 * beside it, on HTTP/1.1 and HTTP/2 alike. With TLS, ALPN picks the
 * protocol; in plaintext each connection's first bytes do (HTTP/2's
 * connection preface, else HTTP/1.1), so curl and h2c clients share the port.
 */
export async function startHttpServer(options: HttpServerOptions): Promise<RunningHttpServer> {
  const rpc = connectNodeAdapter({
    routes: options.routes,
    readMaxBytes: options.readMaxBytes,
    fallback: (request, response) => {
      void servePage(options.pages ?? [], request, response, options.logger);
    },
  });
  const limits = options.connections ?? defaultConnectionLimits;
  const sockets = new Set<Socket>();
  let listener: NetServer;
  let closing = false;
  // HTTP/1.1 keep-alive connections and the requests running on each: once
  // closing, a connection is ended as soon as it has none.
  const h1Busy = new Map<Socket, number>();
  const trackHttp1 = (request: { socket: Socket }, response: { once(event: "close", f: () => void): unknown }) => {
    const socket = request.socket;
    h1Busy.set(socket, (h1Busy.get(socket) ?? 0) + 1);
    response.once("close", () => {
      const left = (h1Busy.get(socket) ?? 1) - 1;
      h1Busy.set(socket, left);
      if (closing && left === 0) socket.destroy();
    });
  };
  const h2Sockets = new WeakSet<Socket>();
  const h2Sessions = new Set<{ close(): void; destroy(): void }>();
  if (options.tls?.cert !== undefined && options.tls.key !== undefined) {
    const ca = options.tls.clientCa !== undefined ? readFileSync(options.tls.clientCa) : undefined;
    const secure = createSecureServer(
      {
        allowHTTP1: true,
        cert: readFileSync(options.tls.cert),
        key: readFileSync(options.tls.key),
        ...(ca ? { ca, requestCert: true, rejectUnauthorized: true } : {}),
        handshakeTimeout: limits.headerTimeoutMs,
        settings: http2Settings(limits),
      },
      rpc,
    );
    secure.maxConnections = limits.maxConnections;
    // HTTP/1.1 over TLS is served by Node's http machinery, which reads its timeouts from the server.
    const { headersTimeout, requestTimeout, keepAliveTimeout } = http1Timeouts(limits);
    Object.assign(secure, { headersTimeout, requestTimeout, keepAliveTimeout });
    guardHttp2Sessions(secure, limits);
    secure.on("request", (request, response) => {
      if (request.httpVersionMajor === 1) trackHttp1(request as unknown as { socket: Socket }, response);
    });
    secure.on("session", (session) => {
      h2Sockets.add(session.socket as Socket);
      h2Sessions.add(session);
      session.once("close", () => h2Sessions.delete(session));
    });
    listener = secure;
  } else {
    const h1 = createHttp1Server(http1Timeouts(limits), rpc);
    h1.on("request", trackHttp1);
    // Node looks for requests past their headers and request timeouts only
    // on servers that listen (it starts doing so on "listening"); this one
    // is handed its connections by the listener below.
    h1.emit("listening");
    const h2 = createH2cServer({ settings: http2Settings(limits) }, rpc);
    guardHttp2Sessions(h2, limits);
    h2.on("session", (session) => {
      h2Sessions.add(session);
      session.once("close", () => h2Sessions.delete(session));
    });
    listener = createNetServer();
    acceptConnections(listener, limits, (socket, head) => {
      const n = Math.min(head.length, http2Preface.length);
      const isH2 = head.toString("latin1", 0, n) === http2Preface.slice(0, n);
      if (isH2) h2Sockets.add(socket);
      (isH2 ? h2 : h1).emit("connection", socket);
    });
  }
  listener.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  const port = await listenOn(listener, options.listen, " (HTTP)");
  const host = options.listen.slice(0, options.listen.lastIndexOf(":"));
  return {
    address: `${host}:${port}`,
    port,
    async close(timeoutMs) {
      closing = true;
      const closed = new Promise<void>((resolve) => listener.close(() => resolve()));
      for (const session of h2Sessions) session.close();
      for (const socket of sockets) if (!h2Sockets.has(socket) && !h1Busy.get(socket)) socket.destroy();
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
      await Promise.race([closed, late]);
      clearTimeout(timer);
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

async function servePage(pages: PageHandler[], request: HttpRequest, response: HttpResponse, logger: Logger) {
  try {
    for (const page of pages) if (await page(request, response)) return;
    response.writeHead(404, { "content-type": "text/plain; charset=utf-8" });
    response.end(`not found: ${request.url}\n`);
  } catch (err) {
    // The URL as redaction leaves it: a page's query may carry a credential (?token=…).
    logger.error({ err, url: logRedactor.url(request.url ?? "") }, "page failed");
    if (!response.headersSent) response.writeHead(500, { "content-type": "text/plain; charset=utf-8" });
    response.end("internal error\n");
  }
}

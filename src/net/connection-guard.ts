import type { Http2Server, Http2Session, Http2Stream, Http2SecureServer } from "node:http2";
import { constants as http2Constants } from "node:http2";
import type { Server as NetServer, Socket } from "node:net";

/** How long a port lets connections and requests take, and how many it holds (flags of `reqlog serve`). */
export interface ConnectionLimits {
  /** Connections one port holds at once; more are closed as they arrive (--max-connections). */
  maxConnections: number;
  /**
   * A new connection must send its first bytes (TLS: finish its handshake)
   * within this, and an HTTP/1.1 request its headers (--header-timeout).
   */
  headerTimeoutMs: number;
  /** A connection with no request or stream in flight is closed after this (--idle-timeout). */
  idleTimeoutMs: number;
  /**
   * A request must have arrived whole (headers and body) this long after it
   * began (--request-timeout). Ingest, a stream of batches at the sender's
   * pace, is exempt: it is held back by flow control instead.
   */
  requestTimeoutMs: number;
  /** Streams one HTTP/2 connection may have open at once (--max-streams-per-connection). */
  maxStreamsPerConnection: number;
}

export const defaultConnectionLimits: Readonly<ConnectionLimits> = {
  maxConnections: 512,
  headerTimeoutMs: 10_000,
  idleTimeoutMs: 60_000,
  requestTimeoutMs: 60_000,
  maxStreamsPerConnection: 100,
};

/** The streams whose request body may come at the sender's pace: Ingest's batches. */
export const streamingRequestPaths: ReadonlySet<string> = new Set(["/reqlog.v1.LogService/Ingest"]);

/**
 * Caps a listener's connections and hands each new one to `serve` once its
 * first bytes have come, within `headerTimeoutMs`: a connection that sends
 * nothing is dropped, so silent sockets cannot hold the port's connections
 * (260 of them made both ports unreachable under `ulimit -n 256`). The
 * bytes are put back for the protocol, which bounds what comes after. (A
 * TLS listener bounds its handshake with `handshakeTimeout` instead.)
 */
export function acceptConnections(listener: NetServer, limits: ConnectionLimits, serve: (socket: Socket, head: Buffer) => void): void {
  listener.maxConnections = limits.maxConnections;
  listener.on("connection", (socket: Socket) => {
    const timer = setTimeout(() => socket.destroy(), limits.headerTimeoutMs);
    timer.unref();
    socket.once("close", () => clearTimeout(timer));
    socket.once("readable", () => {
      clearTimeout(timer);
      const head: Buffer | null = socket.read();
      if (head === null) {
        socket.destroy();
        return;
      }
      socket.unshift(head);
      serve(socket, head);
    });
  });
}

/**
 * Bounds the HTTP/2 sessions of a server: a session with no stream open for
 * `idleTimeoutMs` is closed (a connection that sent its preface and nothing
 * more, or whose calls are done), and a stream whose request has not
 * arrived whole within `requestTimeoutMs` is cancelled (a body that trickles
 * in), Ingest excepted. Streams per session are bounded by the server's
 * `maxConcurrentStreams` setting (http2Settings).
 */
export function guardHttp2Sessions(server: Http2Server | Http2SecureServer, limits: ConnectionLimits): void {
  server.on("session", (session: Http2Session) => {
    let open = 0;
    let idle: NodeJS.Timeout | undefined;
    const startIdle = () => {
      idle = setTimeout(() => session.close(), limits.idleTimeoutMs);
      idle.unref();
    };
    startIdle();
    session.on("stream", (stream: Http2Stream, headers: Record<string, unknown>) => {
      open++;
      clearTimeout(idle);
      const path = String(headers[":path"] ?? "");
      const late = streamingRequestPaths.has(path)
        ? undefined
        : setTimeout(() => stream.close(http2Constants.NGHTTP2_CANCEL), limits.requestTimeoutMs);
      late?.unref();
      stream.once("end", () => clearTimeout(late));
      stream.once("close", () => {
        clearTimeout(late);
        if (--open === 0 && !session.destroyed) startIdle();
      });
    });
    session.once("close", () => clearTimeout(idle));
  });
}

/** HTTP/2 settings a port announces: streams per connection bounded. */
export function http2Settings(limits: ConnectionLimits) {
  return { maxConcurrentStreams: limits.maxStreamsPerConnection };
}

/** Node's HTTP/1.1 timeouts from the limits: headers, the whole request, and keep-alive between requests. */
export function http1Timeouts(limits: ConnectionLimits) {
  return {
    headersTimeout: limits.headerTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.idleTimeoutMs,
    // How often Node looks for requests past those timeouts (its default is 30 s).
    connectionsCheckingInterval: 1000,
  };
}

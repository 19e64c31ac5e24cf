import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { microsecondsNow } from "../clock.js";
import { loadRouteTable, type RouteTable } from "../routes/route-table.js";
import { maxIdentifierBytes } from "../write/identifiers.js";
import type { RequestScope } from "./app-log.js";
import { clientAddress, type TrustProxy } from "./client-address.js";
import { type CapturedRecord, encodeRecord } from "./record-encoder.js";
import type { ReqlogClient } from "./reqlog-client.js";
import { routeTemplate } from "./route-template.js";

export interface RequestLoggerOptions {
  /**
   * Route templates for url_map_entry when the framework has no matched
   * route (node:http, Express's 404s): a RouteTable (forgeRouteTable, or
   * createRouteTable([...])) or the path of a routes file (loadRouteTable).
   */
  routes?: RouteTable | string;
  /** Which proxies' X-Forwarded-For to believe for the client address (default: none). */
  trustProxy?: TrustProxy;
  /** The header a request id is taken from when a request carries one (default "x-request-id"; false: always generate). */
  requestIdHeader?: string | false;
  /** Send the request id back in that header of the response (default true). */
  echoRequestId?: boolean;
  /** Also write each request as in progress when it starts (default false): long requests show up while they run. */
  inProgress?: boolean;
  /** Requests not to record (health checks, metrics scrapes). */
  skip?: (req: IncomingMessage) => boolean;
  /** Told of anything that went wrong recording a request (the app's response is never affected). */
  onError?: (error: unknown) => void;
}

/** What the middleware has done. */
export interface RequestLoggerStats {
  /** Requests recorded (handed to the client's logger; see client.stats() for what became of them). */
  requests: number;
  /** App lines beyond the client's maxLinesPerRequest, not sent. */
  linesDropped: number;
  /** Requests that could not be recorded because of an error in the middleware (see onError). */
  errors: number;
}

export interface RequestCapture {
  /**
   * Starts recording a request: the record is written when the response
   * closes (sent, or cut off), with the route `matched()` names then (the
   * framework's) or the route table's. Returns the scope to serve the
   * request in, or undefined when the request is skipped (or recording it
   * failed: the request is served all the same).
   */
  begin(req: IncomingMessage, res: ServerResponse, matched: () => string | undefined): RequestScope | undefined;
  stats(): RequestLoggerStats;
}

/** Request ids made here: a random prefix per process, then a counter (unique, and cheap to make). */
const idPrefix = randomBytes(6).toString("base64url");
let idCounter = 0;

/** nginx's status for a request whose client went away before a response was sent. */
const clientClosedRequest = 499;

/** Statuses and methods whose responses carry no body, whatever the handler wrote. */
const bodiless = (method: string, status: number) => method === "HEAD" || status === 204 || status === 304;

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function chunkBytes(chunk: unknown, encoding: unknown): number {
  if (typeof chunk === "string") return Buffer.byteLength(chunk, typeof encoding === "string" ? (encoding as BufferEncoding) : "utf8");
  return chunk instanceof Uint8Array ? chunk.byteLength : 0;
}

/**
 * Records requests for the middleware and the Fastify plugin: the fields
 * known when a request starts (method, resource, HTTP version, client
 * address, user agent, referrer, host, request id), those known when its
 * response closes (status, bytes of body sent, end time, latency, route)
 * and the app lines written while serving it. Nothing here can hold or
 * fail the app's response: the record is handed to the client's logger,
 * which never waits, and any error is counted and told to onError.
 */
export function createRequestCapture(client: ReqlogClient, options: RequestLoggerOptions = {}): RequestCapture {
  const routes = typeof options.routes === "string" ? loadRouteTable(options.routes) : options.routes;
  const trust = options.trustProxy ?? false;
  const idHeader = options.requestIdHeader === false ? undefined : (options.requestIdHeader ?? "x-request-id").toLowerCase();
  const echo = idHeader !== undefined && options.echoRequestId !== false;
  const onError = options.onError ?? (() => {});
  const stats: RequestLoggerStats = { requests: 0, linesDropped: 0, errors: 0 };
  let loading = true;

  const failed = (err: unknown) => {
    stats.errors++;
    onError(err);
  };

  function requestIdOf(req: IncomingMessage): string {
    const given = idHeader && header(req, idHeader);
    if (given && Buffer.byteLength(given) <= maxIdentifierBytes) return given;
    return `${idPrefix}-${(++idCounter).toString(36)}`;
  }

  function begin(req: IncomingMessage, res: ServerResponse, matched: () => string | undefined): RequestScope | undefined {
    try {
      if (options.skip?.(req)) return undefined;
      const requestId = requestIdOf(req);
      if (echo && !res.headersSent) res.setHeader(idHeader!, requestId);
      const scope: RequestScope = { lines: [], droppedLines: 0, maxLines: client.maxLinesPerRequest, maxLineBytes: client.maxLineBytes };
      const record: CapturedRecord = {
        requestId,
        startTime: microsecondsNow(),
        endTime: 0,
        method: req.method ?? "GET",
        resource: client.redact.url((req as { originalUrl?: string }).originalUrl ?? req.url ?? "/"),
        httpVersion: `HTTP/${req.httpVersion}`,
        status: 0,
        responseSize: 0,
        ip: clientAddress(req, trust),
        host: header(req, "host") ?? header(req, ":authority") ?? "",
        userAgent: header(req, "user-agent") ?? "",
        referrer: client.redact.url(header(req, "referer") ?? ""),
        urlMapEntry: "",
        finished: false,
        wasLoadingRequest: loading,
        lines: scope.lines,
      };
      loading = false;
      if (options.inProgress) client.logger.offer(encodeRecord(client.identity, record));

      // Bytes of body the handler hands to the response, whatever writes them.
      let bytes = 0;
      const write = res.write;
      const end = res.end;
      res.write = function (this: ServerResponse, chunk: unknown, encoding?: unknown) {
        bytes += chunkBytes(chunk, encoding);
        return write.apply(this, arguments as unknown as Parameters<typeof write>);
      } as typeof res.write;
      res.end = function (this: ServerResponse, chunk?: unknown, encoding?: unknown) {
        if (typeof chunk !== "function") bytes += chunkBytes(chunk, encoding);
        return end.apply(this, arguments as unknown as Parameters<typeof end>);
      } as typeof res.end;

      res.on("close", () => {
        try {
          const sent = res.writableFinished || res.headersSent;
          record.endTime = microsecondsNow();
          record.status = sent ? res.statusCode : clientClosedRequest;
          record.responseSize = sent && !bodiless(record.method, record.status) ? bytes : 0;
          record.urlMapEntry = matched() ?? routes?.match(record.resource) ?? "";
          record.finished = true;
          for (const line of scope.lines) line.message = client.redact.text(line.message);
          stats.requests++;
          stats.linesDropped += scope.droppedLines;
          client.logger.offer(encodeRecord(client.identity, record));
        } catch (err) {
          failed(err);
        }
      });
      return scope;
    } catch (err) {
      failed(err);
      return undefined;
    }
  }

  return { begin, stats: () => ({ ...stats }) };
}

/**
 * The route Express matches for `req`, as a template of its router's mount
 * path and the route's path, read when Express assigns `req.route` (in
 * Route#dispatch): by the time the response closes, a router the request
 * left (an error passed on to an app-level handler) has put its baseUrl
 * back. Not Express (no originalUrl): never a route.
 */
export function watchExpressRoute(req: IncomingMessage): () => string | undefined {
  if (!("originalUrl" in req)) return () => undefined;
  let template: string | undefined;
  let route: unknown;
  Object.defineProperty(req, "route", {
    configurable: true,
    enumerable: true,
    get: () => route,
    set(value: { path?: unknown } | undefined) {
      route = value;
      if (typeof value?.path === "string") template = routeTemplate(((req as { baseUrl?: string }).baseUrl ?? "") + value.path);
    },
  });
  return () => template;
}

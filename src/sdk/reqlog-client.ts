import { hostname } from "node:os";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { type RequestLog, RequestLogSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { type ClientOptions, createLogServiceClient, type LogServiceClient } from "../client/log-service-client.js";
import { metadataKeys } from "../service/call-metadata.js";
import { addProcessSink, clipMessage } from "./app-log.js";
import { type BatchingLogger, type BatchingOptions, createBatchingLogger, type LoggerStats } from "./batching-logger.js";
import { type CapturedLine, encodeLines, type RecordIdentity } from "./record-encoder.js";
import { createRedactor, type Redactor } from "../write/redactor.js";

/** Lines (and bytes of them) one process request takes before the next lines start another. */
const processRequestLines = 10_000;
const processRequestBytes = 1024 * 1024;

export interface ReqlogClientOptions extends BatchingOptions {
  /**
   * HOST:PORT of reqlog's gRPC port, or a URL (http://…, https://…); several
   * servers as a list (["a:50051", "b:50051"]) or one DNS name with several
   * addresses: streams and calls go to them in turn, and batches a server did
   * not acknowledge are sent again to the next one.
   */
  server: string | readonly string[];
  /** Access token (write:logs to send; read:logs for Read, Usage, Stats, Tail). */
  token?: string;
  /** TLS: true for the system's roots, a CA file (PEM), or Node's TLS options. */
  tls?: ClientOptions["tls"];
  /** The app every record is written for. */
  app: string;
  /** Module (service) of this app server (default "default"). */
  module?: string;
  /** Version of this app server (default "default"). */
  version?: string;
  /** This server instance: a record's clone_key and SetStatus's instance (default HOSTNAME-PID). */
  instance?: string;
  /** Deadline of every unary call that gives none (ms, default 10,000). */
  timeoutMs?: number;
  /** PING an idle connection this often, dropping one that does not answer (ms, default 30,000). */
  keepaliveMs?: number;
  /** App lines kept per request; more are counted, not sent (default 1,000; the service takes 10,000). */
  maxLinesPerRequest?: number;
  /** Longest app line message in bytes; longer ones are cut, saying so (default 65,536, the service's max-line-bytes). */
  maxLineBytes?: number;
  /**
   * What the request logger and app lines redact before they are sent, as
   * the server does (docs/privacy.md): the built-in rules (default true) and
   * more parameter names.
   */
  redaction?: { defaults?: boolean; params?: readonly string[] };
}

/** A request record as the app gives it: the app, module, version and instance are the client's. */
export type RecordInit = Omit<
  MessageInitShape<typeof RequestLogSchema> & object,
  "$typeName" | "appId" | "moduleId" | "versionId" | "requestId"
> & {
  /** The request id: text or bytes, at most 256 bytes. */
  requestId: string | Uint8Array;
  /** When the request started (µs since the epoch), its method and resource: required, as the schema says. */
  startTime: bigint;
  method: string;
  resource: string;
};

export interface ReqlogClient {
  /** Every RPC of the LogService, typed (call options: timeoutMs, signal, headers). */
  readonly rpc: LogServiceClient;
  /** The batching logger on the Ingest stream that records and lines go through. */
  readonly logger: BatchingLogger;
  readonly app: string;
  readonly module: string;
  readonly version: string;
  readonly instance: string;
  /** The app, module, version and instance every record is written with. */
  readonly identity: RecordIdentity;
  /** The request id lines written outside any request are filed under now (a new one every 10,000 lines or 1 MiB). */
  readonly processRequestId: string;
  /** Maximums of one request's app lines, for the middleware. */
  readonly maxLinesPerRequest: number;
  readonly maxLineBytes: number;
  /** Credentials in text replaced by REDACTED: what the request logger applies to resources, referrers and app lines. */
  readonly redact: Redactor;
  /** A record of this client's app, module, version and instance, required fields defaulted (the service derives them). */
  record(init: RecordInit): RequestLog;
  /** Buffers a record to send (never waits; false when the full buffer dropped it). */
  send(init: RecordInit | RequestLog): boolean;
  /** Buffers a record to send; under whenFull "block" waits for room. */
  write(init: RecordInit | RequestLog): Promise<void>;
  /** Sends what is buffered and resolves once the service has acknowledged all of it. */
  flush(options?: { timeoutMs?: number }): Promise<void>;
  /** Drains (as flush, within timeoutMs, default 10,000), then closes the connection. */
  close(options?: { timeoutMs?: number }): Promise<void>;
  /** Sent, acknowledged, retried, dropped, refused and buffered records and lines. */
  stats(): LoggerStats;
}

/**
 * A client of reqlog for an app server: every RPC, typed from the generated
 * service, with the app's identity sent as call metadata (so Flush and
 * SetStatus need only their request), and a batching logger that streams
 * records and app lines over Ingest until each batch is acknowledged.
 */
export function createReqlogClient(options: ReqlogClientOptions): ReqlogClient {
  const app = options.app;
  const module = options.module ?? "default";
  const version = options.version ?? "default";
  const instance = options.instance ?? `${hostname()}-${process.pid}`;
  const cloneKey = new TextEncoder().encode(instance);
  const identity: RecordIdentity = { appId: app, moduleId: module, versionId: version, cloneKey };
  const maxLinesPerRequest = options.maxLinesPerRequest ?? 1000;
  const maxLineBytes = options.maxLineBytes ?? 64 * 1024;
  const redact = createRedactor({
    defaults: options.redaction?.defaults ?? true,
    params: options.redaction?.params ?? [],
    patterns: [],
  });

  const rpc = createLogServiceClient({
    server: options.server,
    token: options.token,
    tls: options.tls,
    timeoutMs: options.timeoutMs ?? 10_000,
    keepaliveMs: options.keepaliveMs ?? 30_000,
    headers: {
      [metadataKeys.appId]: app,
      [metadataKeys.moduleId]: module,
      [metadataKeys.versionId]: version,
      [metadataKeys.instanceId]: instance,
    },
  });
  const logger = createBatchingLogger((batches, signal) => rpc.ingest(batches, { signal }), options);

  function record(init: RecordInit): RequestLog {
    const requestId = typeof init.requestId === "string" ? new TextEncoder().encode(init.requestId) : init.requestId;
    return create(RequestLogSchema, {
      ip: "",
      endTime: 0n,
      latency: 0n,
      mcycles: 0n,
      httpVersion: "",
      status: 0,
      responseSize: 0n,
      urlMapEntry: "",
      combined: "",
      cloneKey,
      ...init,
      appId: app,
      moduleId: module,
      versionId: version,
      requestId,
    });
  }
  const asRecord = (init: RecordInit | RequestLog) => ("$typeName" in init ? init : record(init));

  // Lines written outside any request: gathered for a moment, then sent as
  // the lines of one request per process that has no record (it reads as in
  // progress: `reqlog read --include-incomplete --request-id <processRequestId>`).
  // A process request takes at most processRequestLines lines (or
  // processRequestBytes of them), then the next lines start another, well
  // within what the server lets one request hold (--max-request-lines).
  let processStart = Date.now();
  let processRequestId = `${instance}/process/${processStart}`;
  let processSent = { lines: 0, bytes: 0 };
  let processLines: CapturedLine[] = [];
  let processTimer: NodeJS.Timeout | undefined;
  const sendProcessLines = () => {
    if (processTimer) clearTimeout(processTimer);
    processTimer = undefined;
    if (processLines.length === 0) return;
    const bytes = processLines.reduce((sum, line) => sum + Buffer.byteLength(line.message), 0);
    if (processSent.lines > 0 && (processSent.lines + processLines.length > processRequestLines || processSent.bytes + bytes > processRequestBytes)) {
      processStart = Math.max(Date.now(), processStart + 1);
      processRequestId = `${instance}/process/${processStart}`;
      processSent = { lines: 0, bytes: 0 };
    }
    logger.offer(encodeLines(identity, processRequestId, processLines));
    processSent.lines += processLines.length;
    processSent.bytes += bytes;
    processLines = [];
  };
  const removeSink = addProcessSink((level, message, time) => {
    processLines.push({ time, level, message: redact.text(clipMessage(message, maxLineBytes)) });
    if (processLines.length >= maxLinesPerRequest) sendProcessLines();
    else processTimer ??= setTimeout(sendProcessLines, options.flushIntervalMs ?? 100).unref();
  });

  return {
    rpc,
    logger,
    app,
    module,
    version,
    instance,
    identity,
    get processRequestId() {
      return processRequestId;
    },
    maxLinesPerRequest,
    maxLineBytes,
    redact,
    record,
    send: (init) => logger.offer(asRecord(init)),
    write: (init) => logger.write(asRecord(init)),
    flush(flushOptions) {
      sendProcessLines();
      return logger.flush(flushOptions);
    },
    async close(closeOptions) {
      sendProcessLines();
      removeSink();
      try {
        await logger.close(closeOptions);
      } finally {
        rpc.close();
      }
    },
    stats: () => logger.stats(),
  };
}

import { gzipSync } from "node:zlib";
import { create, fromBinary, toBinary, toJson } from "@bufbuild/protobuf";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Metadata } from "@grpc/grpc-js";
import { type DiagLogger, DiagLogLevel, diag, ROOT_CONTEXT, trace, TraceFlags } from "@opentelemetry/api";
import { type Logger, SeverityNumber } from "@opentelemetry/api-logs";
import { OTLPLogExporter as GrpcLogExporter } from "@opentelemetry/exporter-logs-otlp-grpc";
import { OTLPLogExporter as HttpLogExporter } from "@opentelemetry/exporter-logs-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchLogRecordProcessor, LoggerProvider } from "@opentelemetry/sdk-logs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  ExportLogsServiceRequestSchema,
  ExportLogsServiceResponseSchema,
  LogsService,
} from "../../gen/opentelemetry/proto/collector/logs/v1/logs_service_pb.js";
import type { RequestLog } from "../../gen/reqlog/v1/log_service_pb.js";
import { failureOf } from "../helpers/test-client.js";
import { readAll } from "../helpers/read-all.js";
import { useTestServer } from "../helpers/test-server.js";

const ts = useTestServer({ http: true, limits: { maxRecordsPerWrite: 5, maxLineBytes: 200, maxLinesPerFlush: 2, rateLimit: 2 }, monotonicNow: () => clock });
/** The rate limiter's clock (ms): still, so a token's calls per second add up within a test. */
const clock = 0;

/** What the SDK's diagnostics said (an exporter reports partial success and failures there). */
let said: string[];
beforeEach(() => {
  said = [];
  const capture = (...args: unknown[]) => void said.push(args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" "));
  const logger: DiagLogger = { error: capture, warn: capture, info: () => {}, debug: () => {}, verbose: () => {} };
  diag.setLogger(logger, DiagLogLevel.WARN);
});
afterEach(() => diag.disable());

const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
const spanId = "00f067aa0ba902b7";
const inSpan = trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId, traceFlags: TraceFlags.SAMPLED });
const when = new Date("2026-11-18T11:06:40.250Z");

/** What an HTTP server instrumentation logs for a request (semantic conventions' attribute names). */
const requestAttributes = {
  "http.request.method": "GET",
  "url.path": "/api/v1/repos/alice/app/commits",
  "url.query": "limit=10",
  "http.response.status_code": 200,
  "http.route": "/api/v1/repos/{owner}/{repo}/commits",
  "client.address": "203.0.113.9",
  "user_agent.original": "git/2.43.0",
  "server.address": "forge.test",
  "network.protocol.version": "1.1",
  "http.server.request.duration": 0.125,
};

/** A provider with the exporter, the forge's resource, and a logger of it. */
function sdk(exporter: GrpcLogExporter | HttpLogExporter): { provider: LoggerProvider; logger: Logger } {
  const provider = new LoggerProvider({
    resource: resourceFromAttributes({ "service.name": "forge", "service.version": "v42", "service.instance.id": "web-1" }),
    processors: [new BatchLogRecordProcessor({ exporter })],
  });
  return { provider, logger: provider.getLogger("forge-http", "1.0.0") };
}

/** Logs one request as an app would: two lines while serving it, its access record, and a line outside any request. */
function logOneRequest(logger: Logger) {
  logger.emit({ context: inSpan, timestamp: new Date(when.getTime() - 100), severityNumber: SeverityNumber.INFO, severityText: "INFO", body: "listing commits" });
  logger.emit({
    context: inSpan,
    timestamp: new Date(when.getTime() - 50),
    severityNumber: SeverityNumber.WARN2,
    body: "slow git call",
    attributes: { "git.command": "log", "duration.ms": 42 },
  });
  logger.emit({ context: inSpan, timestamp: when, severityNumber: SeverityNumber.INFO, body: "GET /api/v1/repos/alice/app/commits 200", attributes: requestAttributes });
  logger.emit({ timestamp: when, severityText: "ERROR", body: { event: "cache evicted", keys: 12 } });
}

function checkArrived(records: RequestLog[]) {
  const request = records.find((r) => new TextDecoder().decode(r.requestId) === traceId)!;
  expect(request).toBeDefined();
  expect({
    app: request.appId,
    module: request.moduleId,
    version: request.versionId,
    method: request.method,
    resource: request.resource,
    status: request.status,
    route: request.urlMapEntry,
    ip: request.ip,
    userAgent: request.userAgent,
    host: request.host,
    httpVersion: request.httpVersion,
    latency: request.latency,
    end: request.endTime,
    finished: request.finished,
    combined: request.combined,
  }).toEqual({
    app: "forge",
    module: "default",
    version: "v42",
    method: "GET",
    resource: "/api/v1/repos/alice/app/commits?limit=10",
    status: 200,
    route: "/api/v1/repos/{owner}/{repo}/commits",
    ip: "203.0.113.9",
    userAgent: "git/2.43.0",
    host: "forge.test",
    httpVersion: "HTTP/1.1",
    latency: 125_000n,
    end: BigInt(when.getTime()) * 1000n,
    finished: true,
    combined: '203.0.113.9 - - [18/Nov/2026:11:06:40 +0000] "GET /api/v1/repos/alice/app/commits?limit=10 HTTP/1.1" 200 0 "-" "git/2.43.0"',
  });
  expect(request.line.map((l) => [l.time, l.level, l.logMessage])).toEqual([
    [BigInt(when.getTime() - 100) * 1000n, 1, "listing commits"],
    [BigInt(when.getTime() - 50) * 1000n, 2, 'slow git call {"git.command":"log","duration.ms":42}'],
  ]);
  // The line outside any request: the resource's request of that hour, in progress (it has no record).
  const perResource = records.find((r) => new TextDecoder().decode(r.requestId).startsWith("otlp-"))!;
  expect(new TextDecoder().decode(perResource.requestId)).toMatch(/^otlp-[0-9a-f]{16}-2026111811\d\d$/);
  expect(perResource.finished).toBe(false);
  expect(perResource.line.map((l) => [l.level, l.logMessage])).toEqual([[3, '{"event":"cache evicted","keys":12}']]);
  expect(records).toHaveLength(2);
}

describe("the OTLP logs receiver, with the OpenTelemetry JS SDK's exporters", () => {
  it("takes logs from the gRPC exporter on the gRPC port: the HTTP record as a request, the others as its lines", async () => {
    const { provider, logger } = sdk(new GrpcLogExporter({ url: `http://${ts.server.address}` }));
    logOneRequest(logger);
    await provider.forceFlush();
    await provider.shutdown();
    expect(said).toEqual([]);
    checkArrived(await readAll(ts.client, "forge"));
  });

  it("takes logs from the HTTP exporter (OTLP JSON) on POST /v1/logs, with a token", async () => {
    const { token } = await ts.backend.tokens.create({ name: "otel", scopes: ["write:logs"], apps: ["forge"] });
    const { provider, logger } = sdk(new HttpLogExporter({ url: `http://${ts.httpAddress}/v1/logs`, headers: { authorization: `Bearer ${token}` } }));
    logOneRequest(logger);
    await provider.forceFlush();
    await provider.shutdown();
    expect(said).toEqual([]);
    const { token: reader } = await ts.backend.tokens.create({ name: "reader", scopes: ["read:logs"] });
    checkArrived(await readAll(ts.connect({ token: reader }), "forge"));
  });

  it("takes the gRPC exporter on the HTTP port too (gRPC over h2c), and counts the calls in /metrics", async () => {
    const { provider, logger } = sdk(new GrpcLogExporter({ url: `http://${ts.httpAddress}` }));
    logOneRequest(logger);
    await provider.forceFlush();
    await provider.shutdown();
    expect(said).toEqual([]);
    checkArrived(await readAll(ts.client, "forge"));
    const metrics = await (await fetch(`http://${ts.httpAddress}/metrics`)).text();
    expect(metrics).toMatch(
      /grpc_server_handled_total\{[^}]*grpc_service="opentelemetry\.proto\.collector\.logs\.v1\.LogsService",grpc_method="Export"[^}]*grpc_code="OK"[^}]*\} 1/,
    );
  });

  it("refuses the SDK's export without a valid token, over gRPC and HTTP, and stores nothing", async () => {
    await ts.backend.tokens.create({ name: "otel", scopes: ["write:logs"] });
    const metadata = new Metadata();
    metadata.set("authorization", "Bearer rql_not-a-token");
    for (const exporter of [new GrpcLogExporter({ url: `http://${ts.server.address}`, metadata }), new HttpLogExporter({ url: `http://${ts.httpAddress}/v1/logs` })]) {
      const { provider, logger } = sdk(exporter);
      logOneRequest(logger);
      await provider.forceFlush().catch(() => {});
      await provider.shutdown().catch(() => {});
    }
    expect(said.join("\n")).toMatch(/UNAUTHENTICATED|Unauthenticated|401/);
    expect(ts.db.prepare("SELECT count(*) AS n FROM requests").get()).toEqual({ n: 0 });
  });
});

/** An Export as the OTLP protos define it, for cases no SDK sends. */
function exportRequest(records: Record<string, unknown>[], resource: Record<string, string> = { "service.name": "forge" }) {
  return create(ExportLogsServiceRequestSchema, {
    resourceLogs: [
      {
        resource: { attributes: Object.entries(resource).map(([key, value]) => ({ key, value: { value: { case: "stringValue" as const, value } } })) },
        scopeLogs: [{ logRecords: records as never }],
      },
    ],
  });
}

const str = (value: string) => ({ value: { case: "stringValue" as const, value } });
const int = (value: number) => ({ value: { case: "intValue" as const, value: BigInt(value) } });
const at = BigInt(when.getTime()) * 1_000_000n;
const httpRecord = (path: string, status: ReturnType<typeof int | typeof str>, traceHex?: string) => ({
  timeUnixNano: at,
  ...(traceHex ? { traceId: Buffer.from(traceHex, "hex") } : {}),
  attributes: [
    { key: "http.request.method", value: str("GET") },
    { key: "url.path", value: str(path) },
    { key: "http.response.status_code", value: status },
  ],
});

describe("partial success, limits and errors", () => {
  it("stores the good records, rejects the bad ones by place and reason in partial_success (gRPC)", async () => {
    const otlp = createClient(LogsService, createGrpcTransport({ baseUrl: `http://${ts.server.address}` }));
    const reply = await otlp.export(
      exportRequest([
        httpRecord("/api/v1/teams/1", int(200), "0af7651916cd43dd8448eb211c80319c"),
        httpRecord("/api/v1/teams/2", str("two hundred")),
        { timeUnixNano: at, body: str("x".repeat(300)), traceId: Buffer.from("0af7651916cd43dd8448eb211c80319c", "hex") },
        { body: str("no time at all") },
        { timeUnixNano: at, severityNumber: 17, body: str("kept"), traceId: Buffer.from("0af7651916cd43dd8448eb211c80319c", "hex") },
      ]),
    );
    expect(toJson(ExportLogsServiceResponseSchema, reply)).toEqual({
      partialSuccess: {
        rejectedLogRecords: "3",
        errorMessage:
          '3 log records rejected: resource_logs[0].scope_logs[0].log_records[1]: http.response.status_code is "two hundred", not an integer; ' +
          "resource_logs[0].scope_logs[0].log_records[2]: the log record's message size in bytes is 300, over the limit max-line-bytes=200; " +
          "resource_logs[0].scope_logs[0].log_records[3]: it has neither time_unix_nano nor observed_time_unix_nano",
      },
    });
    const [stored] = await readAll(ts.client, "forge");
    expect([stored!.resource, stored!.versionId, stored!.line.map((l) => [l.level, l.logMessage])]).toEqual(["/api/v1/teams/1", "unknown", [[3, "kept"]]]);
    // Sent again (an exporter's retry), nothing is doubled.
    await otlp.export(exportRequest([httpRecord("/api/v1/teams/1", int(200), "0af7651916cd43dd8448eb211c80319c"), { timeUnixNano: at, severityNumber: 17, body: str("kept"), traceId: Buffer.from("0af7651916cd43dd8448eb211c80319c", "hex") }]));
    const again = await readAll(ts.client, "forge");
    expect(again).toHaveLength(1);
    expect(again[0]!.line).toHaveLength(1);
  });

  it("answers OTLP/HTTP in protobuf as in JSON, partial success included", async () => {
    const request = exportRequest([httpRecord("/api/v1/teams/3", int(404)), httpRecord("/api/v1/teams/4", str("bad"))], { "service.name": "forge", "service.version": "v9" });
    const binary = await fetch(`http://${ts.httpAddress}/v1/logs`, { method: "POST", headers: { "content-type": "application/x-protobuf" }, body: toBinary(ExportLogsServiceRequestSchema, request) });
    expect([binary.status, binary.headers.get("content-type")]).toEqual([200, "application/x-protobuf"]);
    expect(toJson(ExportLogsServiceResponseSchema, fromBinary(ExportLogsServiceResponseSchema, new Uint8Array(await binary.arrayBuffer())))).toEqual({
      partialSuccess: {
        rejectedLogRecords: "1",
        errorMessage: '1 log record rejected: resource_logs[0].scope_logs[0].log_records[1]: http.response.status_code is "bad", not an integer',
      },
    });
    const json = await fetch(`http://${ts.httpAddress}/v1/logs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        resourceLogs: [{
          resource: { attributes: [{ key: "service.name", value: { stringValue: "forge" } }] },
          scopeLogs: [{ logRecords: [{ timeUnixNano: String(at), traceId: "5b8efff798038103d269b633813fc60c", spanId: "eee19b7ec3c1b174", severityNumber: 13, body: { stringValue: "hello" }, unknownField: 1 }] }],
        }],
      }),
    });
    expect([json.status, await json.json()]).toEqual([200, {}]);
    const records = await readAll(ts.client, "forge");
    const id = (r: RequestLog) => new TextDecoder().decode(r.requestId);
    const teams3 = records.find((r) => r.resource === "/api/v1/teams/3")!;
    // No trace: the request is named by a hash of its record, the same when the export is sent again.
    expect([id(teams3), teams3.status, teams3.versionId]).toEqual([expect.stringMatching(/^otlp-[0-9a-f]{24}$/), 404, "v9"]);
    const traced = records.find((r) => id(r) === "5b8efff798038103d269b633813fc60c")!;
    expect([traced.versionId, traced.finished, traced.line.map((l) => [l.level, l.logMessage])]).toEqual(["unknown", false, [[2, "hello"]]]);
    expect(records).toHaveLength(2);
  });

  it("refuses what cannot be read with 400, 405, 413 and 415 and a google.rpc.Status naming the problem", async () => {
    const post = (body: string | Uint8Array, type = "application/json", more: Record<string, string> = {}) =>
      fetch(`http://${ts.httpAddress}/v1/logs`, { method: "POST", headers: { "content-type": type, ...more }, body });
    const bad = await post("{not json");
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: 3, message: expect.stringMatching(/^cannot decode ExportLogsServiceRequest \(JSON\): /), details: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "INVALID_REQUEST", domain: "reqlog" }] });
    const hexless = await post(JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ traceId: "zz" }] }] }] }));
    expect(await hexless.json()).toMatchObject({ code: 3, message: 'resourceLogs[0].scopeLogs[0].logRecords[0].traceId is not hex: "zz"' });
    // JSON whose bytes are not UTF-8 is refused, as on Connect's JSON: stored text is never altered (U+FFFD).
    const notUtf8 = await post(Buffer.concat([Buffer.from('{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"stringValue":"caf'), Buffer.from([0xe9]), Buffer.from('"}}]}]}]}')]));
    expect(notUtf8.status).toBe(400);
    expect(await notUtf8.json()).toMatchObject({ code: 3, message: "cannot decode ExportLogsServiceRequest (JSON): the body is not UTF-8" });
    expect((await post("x", "text/plain")).status).toBe(415);
    // 16 MiB of zeros in 16 KiB of gzip: refused once it decompresses past max-message-bytes, not retried (413).
    const bomb = await post(gzipSync(Buffer.alloc(16 * 1024 * 1024 + 1)), "application/x-protobuf", { "content-encoding": "gzip" });
    expect(bomb.status).toBe(413);
    expect(fromBinary(StatusSchema, new Uint8Array(await bomb.arrayBuffer())).message).toBe(
      "the request body's size in bytes once decompressed is more than 16777216, over the limit max-message-bytes=16777216",
    );
    expect((await fetch(`http://${ts.httpAddress}/v1/logs`)).status).toBe(405);
    const tooMany = await post(toBinary(ExportLogsServiceRequestSchema, exportRequest(Array.from({ length: 6 }, (_, i) => httpRecord(`/x/${i}`, int(200))))), "application/x-protobuf");
    expect(tooMany.status).toBe(400);
    expect(tooMany.headers.get("content-type")).toBe("application/x-protobuf");
    expect(fromBinary(StatusSchema, new Uint8Array(await tooMany.arrayBuffer())).message).toBe(
      "number of request records in an Export is 6, over the limit max-records-per-write=5",
    );
  });

  it("refuses more log records of one request than max-lines-per-flush, naming the limit", async () => {
    const otlp = createClient(LogsService, createGrpcTransport({ baseUrl: `http://${ts.server.address}` }));
    const many = Array.from({ length: 3 }, (_, i) => ({ timeUnixNano: at + BigInt(i), body: str(`line ${i}`), traceId: Buffer.from(traceId, "hex") }));
    const err = await otlp.export(exportRequest(many)).then(() => undefined, (e: unknown) => e);
    expect(failureOf(err)).toEqual({
      code: 3,
      reason: "INVALID_REQUEST",
      details: `number of log records of one request (${traceId}) in an Export is 3, over the limit max-lines-per-flush=2`,
    });
    expect(ts.db.prepare("SELECT count(*) AS n FROM requests").get()).toEqual({ n: 0 });
  });

  it("refuses a token limited to another app with PERMISSION_DENIED (403 over HTTP)", async () => {
    const { token } = await ts.backend.tokens.create({ name: "other", scopes: ["write:logs"], apps: ["other"] });
    const otlp = createClient(LogsService, createGrpcTransport({ baseUrl: `http://${ts.server.address}` }));
    const err = await otlp.export(exportRequest([httpRecord("/a", int(200))]), { headers: { authorization: `Bearer ${token}` } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConnectError);
    expect(failureOf(err)).toMatchObject({ code: 7, reason: "INVALID_REQUEST" });
    const http = await fetch(`http://${ts.httpAddress}/v1/logs`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify(toJson(ExportLogsServiceRequestSchema, exportRequest([httpRecord("/a", int(200))]))),
    });
    expect(http.status).toBe(403);
    expect(ts.db.prepare("SELECT count(*) AS n FROM requests").get()).toEqual({ n: 0 });
  });
});

describe("tokens and rates on OTLP/HTTP", () => {
  it("names the token's one app when the resource has none, and answers 429 with Retry-After past --rate-limit", async () => {
    const { token } = await ts.backend.tokens.create({ name: "otel", scopes: ["write:logs"], apps: ["forge"] });
    const post = () =>
      fetch(`http://${ts.httpAddress}/v1/logs`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
        body: JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ timeUnixNano: String(at), body: { stringValue: "no service.name" } }] }] }] }),
      });
    expect([(await post()).status, (await post()).status]).toEqual([200, 200]);
    const limited = await post();
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(await limited.json()).toMatchObject({ code: 8, details: expect.arrayContaining([expect.objectContaining({ "@type": "type.googleapis.com/google.rpc.RetryInfo" })]) });
    const { token: reader } = await ts.backend.tokens.create({ name: "reader", scopes: ["read:logs"] });
    const [perResource] = await readAll(ts.connect({ token: reader }), "forge");
    expect(perResource!.appId).toBe("forge");
    expect(perResource!.line.map((l) => l.logMessage)).toEqual(["no service.name"]);
  });
});

import { create, type DescMessage, toBinary } from "@bufbuild/protobuf";
import { Client, credentials, Metadata, type ServiceError, status } from "@grpc/grpc-js";
import {
  AlertsRequestSchema,
  DeleteRequestSchema,
  FlushRequestSchema,
  IngestRequestSchema,
  RequestLinesSchema,
  ListStatusRequestSchema,
  LogLineSchema,
  LogReadRequestSchema,
  LogUsageRequestSchema,
  QueryRequestSchema,
  RequestLogSchema,
  SetStatusRequestSchema,
  StatsRequestSchema,
  UserAppLogGroupSchema,
  UserAppLogLineSchema,
  WriteRequestSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { ExportLogsServiceRequestSchema } from "../../gen/opentelemetry/proto/collector/logs/v1/logs_service_pb.js";
import { createRandom } from "../forge-traffic.js";

const t0 = 1_795_000_000_000_000n;
const context = { "reqlog-app-id": "fuzz", "reqlog-version-id": "v1", "reqlog-request-id": "req-1", "reqlog-instance-id": "i-1" };

const log = (i: number) =>
  create(RequestLogSchema, {
    appId: "fuzz", versionId: "v1", requestId: new TextEncoder().encode(`f${i}`), ip: "192.0.2.1", startTime: t0,
    endTime: t0 + 10n, latency: 10n, mcycles: 0n, method: "GET", resource: "/api/v1/teams/1", httpVersion: "HTTP/1.1",
    status: 200, responseSize: 9n, urlMapEntry: "", combined: "", host: "forge.example",
    line: [create(LogLineSchema, { time: t0, level: 1, logMessage: "caf\u00e9" })],
  });

const group = toBinary(UserAppLogGroupSchema, create(UserAppLogGroupSchema, {
  logLine: [create(UserAppLogLineSchema, { timestampUsec: t0, level: 2n, message: "m\u00e9" })],
}));

/** An OTLP export of one request record and one app line (service.name picks the app). */
const otlpExport = create(ExportLogsServiceRequestSchema, {
  resourceLogs: [{
    resource: { attributes: [{ key: "service.name", value: { value: { case: "stringValue", value: "fuzz" } } }] },
    scopeLogs: [{
      logRecords: [
        {
          timeUnixNano: t0 * 1000n,
          traceId: new Uint8Array(16).fill(7),
          body: { value: { case: "stringValue", value: "GET /api/v1/teams/1 \u00e9" } },
          attributes: [
            { key: "http.request.method", value: { value: { case: "stringValue", value: "GET" } } },
            { key: "url.path", value: { value: { case: "stringValue", value: "/api/v1/teams/1" } } },
            { key: "http.response.status_code", value: { value: { case: "intValue", value: 200n } } },
          ],
        },
        { timeUnixNano: t0 * 1000n + 1n, traceId: new Uint8Array(16).fill(7), body: { value: { case: "stringValue", value: "caf\u00e9" } } },
      ],
    }],
  }],
});

/** A valid request for each RPC (the LogService's and OTLP's Export): what the mutations start from. */
const seeds: { method: string; service?: string; stream: boolean | "bidi"; schema: DescMessage; bytes: Uint8Array }[] = [
  {
    method: "Ingest",
    stream: "bidi",
    schema: IngestRequestSchema,
    bytes: toBinary(IngestRequestSchema, create(IngestRequestSchema, {
      batchId: 1n,
      log: [log(3)],
      lines: [create(RequestLinesSchema, { appId: "fuzz", versionId: "v1", requestId: new TextEncoder().encode("f3"), line: [create(UserAppLogLineSchema, { timestampUsec: t0, level: 1n, message: "\u00e9" })] })],
    })),
  },
  { method: "Write", stream: false, schema: WriteRequestSchema, bytes: toBinary(WriteRequestSchema, create(WriteRequestSchema, { log: [log(1), log(2)] })) },
  { method: "Flush", stream: false, schema: FlushRequestSchema, bytes: toBinary(FlushRequestSchema, create(FlushRequestSchema, { logs: group })) },
  { method: "SetStatus", stream: false, schema: SetStatusRequestSchema, bytes: toBinary(SetStatusRequestSchema, create(SetStatusRequestSchema, { status: "serving \u00e9" })) },
  { method: "Read", stream: false, schema: LogReadRequestSchema, bytes: toBinary(LogReadRequestSchema, create(LogReadRequestSchema, { appId: "fuzz", count: 5n, combinedLogRegex: "GET", includeAppLogs: true })) },
  { method: "Usage", stream: false, schema: LogUsageRequestSchema, bytes: toBinary(LogUsageRequestSchema, create(LogUsageRequestSchema, { appId: "fuzz", resolutionHours: 2 })) },
  { method: "ListStatus", stream: false, schema: ListStatusRequestSchema, bytes: toBinary(ListStatusRequestSchema, create(ListStatusRequestSchema, { appId: "fuzz" })) },
  { method: "Tail", stream: true, schema: LogReadRequestSchema, bytes: toBinary(LogReadRequestSchema, create(LogReadRequestSchema, { appId: "fuzz" })) },
  {
    method: "Stats",
    stream: false,
    schema: StatsRequestSchema,
    bytes: toBinary(StatsRequestSchema, create(StatsRequestSchema, { appId: "fuzz", resolutionHours: 1, topN: 3, excludeUserAgentRegex: "(?i)bot\u00e9" })),
  },
  {
    method: "Query",
    stream: true,
    schema: QueryRequestSchema,
    bytes: toBinary(QueryRequestSchema, create(QueryRequestSchema, { appId: "fuzz", query: "status:>=500 \"caf\u00e9\" | stats by (route) count()" })),
  },
  { method: "Alerts", stream: false, schema: AlertsRequestSchema, bytes: toBinary(AlertsRequestSchema, create(AlertsRequestSchema, { appId: "fuzz\u00e9", startTime: t0 / 1_000_000n })) },
  // A Delete of the fuzzer's own app, by address: a mutation that reached
  // another app's name would have to rewrite every byte of "fuzz".
  {
    method: "Delete",
    stream: false,
    schema: DeleteRequestSchema,
    bytes: toBinary(DeleteRequestSchema, create(DeleteRequestSchema, { appId: "fuzz", ip: ["192.0.2.0/24"], combinedLogRegex: "caf\u00e9", dryRun: true })),
  },
  {
    method: "Export",
    service: "opentelemetry.proto.collector.logs.v1.LogsService",
    stream: false,
    schema: ExportLogsServiceRequestSchema,
    bytes: toBinary(ExportLogsServiceRequestSchema, otlpExport),
  },
];

/** Every RPC the fuzzer sends to, as service/method: the fuzz test checks it is every RPC served. */
export const fuzzedRpcs = seeds.map((s) => `${s.service ?? "reqlog.v1.LogService"}/${s.method}`);

type Random = ReturnType<typeof createRandom>;

/** One hostile message: random, mutated, truncated, of another type, oversized, or with bad UTF-8. */
function hostile(r: Random, seed: Uint8Array): { kind: string; bytes: Uint8Array } {
  switch (r.int(7)) {
    case 0:
      return { kind: "random", bytes: Uint8Array.from({ length: r.int(300) }, () => r.int(256)) };
    case 1: {
      const bytes = Uint8Array.from(seed);
      for (let i = 0, n = 1 + r.int(5); i < n && bytes.length > 0; i++) bytes[r.int(bytes.length)] ^= 1 << r.int(8);
      return { kind: "flipped", bytes };
    }
    case 2:
      return { kind: "truncated", bytes: seed.slice(0, r.int(seed.length)) };
    case 3:
      return { kind: "other type", bytes: r.pick(seeds).bytes };
    case 4: {
      // A repeated field many times over: the first field of the seed, copied.
      const parts = Array.from({ length: 200 + r.int(3000) }, () => seed);
      return { kind: "huge repeated", bytes: Buffer.concat(parts) };
    }
    case 5: {
      const bytes = Uint8Array.from(seed);
      const at = bytes.findIndex((b) => b === 0xc3); // inside an é
      if (at >= 0) bytes[at] = 0xff;
      return { kind: "invalid utf-8", bytes };
    }
    default: {
      const bytes = Uint8Array.from([...seed, ...Array.from({ length: 1 + r.int(20) }, () => r.int(256))]);
      return { kind: "trailing junk", bytes };
    }
  }
}

function metadataFor(r: Random, method: string): Metadata {
  const md = new Metadata();
  if (method === "Flush" || method === "SetStatus") {
    for (const [k, v] of Object.entries(context)) if (r.next() > 0.1) md.set(k, r.next() < 0.1 ? "" : v);
  }
  return md;
}

export interface FuzzReport {
  sent: number;
  /** Replies by gRPC status name. */
  codes: Record<string, number>;
  /** Messages sent, by method. */
  byMethod: Record<string, number>;
  /** Calls answered INTERNAL or UNKNOWN: bugs. */
  failures: { method: string; kind: string; code: string; details: string }[];
  /**
   * Calls cut off when the HTTP/2 stack closed the connection as a defence
   * against rapid stream resets (the fuzzer cancels thousands of accepted
   * Tail streams a second on one connection): the transport's doing, not an
   * answer of reqlog's; such calls are not counted in `codes`.
   */
  transportResets: number;
  seconds: number;
}

const codeName = (code: number) => (status as unknown as Record<number, string>)[code] ?? String(code);

/**
 * Sends `count` hostile messages to every RPC in turn (raw bytes, so nothing
 * on the client side checks them) and tallies the answers. `server` is the
 * plaintext server's HOST:PORT (a connection of the fuzzer's own, closed at
 * the end), or a grpc-js client to send with.
 */
export async function fuzz(server: string | Client, count: number, seed = 1, concurrency = 16): Promise<FuzzReport> {
  // grpc-js, not the typed client: only a generic client sends bytes no encoder checked.
  const client = typeof server === "string" ? new Client(server, credentials.createInsecure()) : server;
  try {
    return await fuzzWith(client, count, seed, concurrency);
  } finally {
    if (client !== server) client.close();
  }
}

async function fuzzWith(client: Client, count: number, seed: number, concurrency: number): Promise<FuzzReport> {
  const r = createRandom(seed);
  const report: FuzzReport = { sent: 0, codes: {}, byMethod: {}, failures: [], transportResets: 0, seconds: 0 };
  const started = performance.now();
  const one = async (): Promise<void> => {
    const target = r.pick(seeds);
    const { kind, bytes } = hostile(r, target.bytes);
    const path = `/${target.service ?? "reqlog.v1.LogService"}/${target.method}`;
    const md = metadataFor(r, target.method);
    const code = await new Promise<number>((resolve) => {
      const done = (err: ServiceError | null) => {
        const c = err ? err.code : status.OK;
        if (c === status.INTERNAL && err?.details.includes("Session closed with error code 2")) {
          report.transportResets++;
          resolve(-1);
          return;
        }
        if (c === status.INTERNAL || c === status.UNKNOWN) {
          report.failures.push({ method: target.method, kind, code: codeName(c), details: err?.details ?? "" });
        }
        resolve(c);
      };
      if (target.stream === "bidi") {
        const call = client.makeBidiStreamRequest(path, (b: Buffer) => b, (b: Buffer) => b, md);
        call.on("data", () => undefined);
        call.on("error", (e: ServiceError) => done(e));
        call.on("end", () => done(null));
        call.write(Buffer.from(bytes));
        call.end();
      } else if (target.stream) {
        const call = client.makeServerStreamRequest(path, (b: Buffer) => b, (b: Buffer) => b, Buffer.from(bytes), md);
        call.on("metadata", () => call.cancel());
        call.on("data", () => undefined);
        call.on("error", (e: ServiceError) => done(e.code === status.CANCELLED ? null : e));
        call.on("end", () => done(null));
      } else {
        client.makeUnaryRequest(path, (b: Buffer) => b, (b: Buffer) => b, Buffer.from(bytes), md, (err) => done(err));
      }
    });
    report.sent++;
    report.byMethod[target.method] = (report.byMethod[target.method] ?? 0) + 1;
    if (code >= 0) report.codes[codeName(code)] = (report.codes[codeName(code)] ?? 0) + 1;
  };
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < count) await one();
    }),
  );
  report.seconds = (performance.now() - started) / 1000;
  return report;
}

/**
 * The SDK's batching logger: how many requests a second (each with 3 app
 * lines) it sustains into one reqlog server, against the same records sent
 * as ready-made batches on one raw Ingest stream (the server's ceiling for
 * one stream), rounds alternating which goes first, each on a fresh
 * `reqlog serve` (child process, --sync normal).
 *   npm run bench:sdk -- [requests] [rounds]     (defaults 300,000 and 3)
 *
 * The SDK side does what the middleware does after a response: it encodes
 * each captured request (record-encoder.ts) and writes it to the logger
 * (whenFull "block", so it is held back by the service rather than drop),
 * which batches, sends and waits for acknowledgements; the clock stops when
 * flush() resolves, i.e. when everything is stored. The raw side's batches
 * are built before its clock starts. Both print their client CPU time per
 * request, measured in this process.
 */
import { create } from "@bufbuild/protobuf";
import {
  type IngestRequest,
  IngestRequestSchema,
  LogLineSchema,
  RequestLogSchema,
} from "../gen/reqlog/v1/log_service_pb.js";
import { createLogServiceClient } from "../src/client/log-service-client.js";
import { createReqlogClient } from "../src/sdk/reqlog-client.js";
import { type CapturedRecord, encodeRecord } from "../src/sdk/record-encoder.js";
import { startChildServer } from "./harness/child-server.js";
import { benchDbPath, benchStart, median } from "./load.js";

const total = Number(process.argv[2] ?? 300_000);
const rounds = Number(process.argv[3] ?? 3);
const t0 = Number(benchStart);
const messages = ["resolving ref main", "listing commits for alice/app", "serving artifact from object storage"];

/** The i-th request as the middleware captures it. */
function captured(i: number): CapturedRecord {
  const start = t0 + i * 100;
  return {
    requestId: `sdk-${i}`,
    startTime: start,
    endTime: start + 1500 + (i % 700),
    method: i % 5 === 0 ? "POST" : "GET",
    resource: `/api/v1/repos/alice/app/commits?page=${i % 40}`,
    httpVersion: "HTTP/1.1",
    status: i % 17 === 0 ? 404 : 200,
    responseSize: 2000 + (i % 5000),
    ip: `192.0.2.${i % 250}`,
    userAgent: "git/2.43.0",
    referrer: "",
    host: "forge.example",
    urlMapEntry: "/api/v1/repos/{owner}/{repo}/commits",
    finished: true,
    wasLoadingRequest: false,
    lines: messages.map((message, j) => ({ time: start + 10 + j, level: j, message })),
  };
}

const serve = () => startChildServer(["--db", benchDbPath("sdk"), "--listen", "127.0.0.1:0", "--http-listen", "off", "--sync", "normal", "--read-workers", "0"]);

const cpuMicros = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

/** A side's rate, its client's CPU per request (this process) and the server's (its process), µs. */
interface SideFigures {
  rate: number;
  cpuPerRequest: number;
  serverCpuPerRequest: number;
}

async function viaSdk(): Promise<SideFigures> {
  const server = await serve();
  const serverCpu = server.cpuMicros();
  const reqlog = createReqlogClient({ server: server.address, app: "forge", version: "v1", whenFull: "block" });
  const cpu = cpuMicros();
  const started = performance.now();
  // A write with room resolves at once; when the logger is full, it waits for the service.
  for (let i = 0; i < total; i++) await reqlog.logger.write(encodeRecord(reqlog.identity, captured(i)));
  await reqlog.flush();
  const seconds = (performance.now() - started) / 1000;
  const used = cpuMicros() - cpu;
  const stats = reqlog.stats();
  if (stats.acknowledged.records !== total || stats.acknowledged.lines !== 3 * total) {
    throw new Error(`acknowledged ${stats.acknowledged.records} records and ${stats.acknowledged.lines} lines of ${total}`);
  }
  const serverUsed = server.cpuMicros() - serverCpu;
  await reqlog.close();
  await server.stop();
  return { rate: total / seconds, cpuPerRequest: used / total, serverCpuPerRequest: serverUsed / total };
}

async function viaRawIngest(): Promise<SideFigures> {
  const server = await serve();
  const client = createLogServiceClient({ server: server.address });
  const batches: IngestRequest[] = [];
  for (let b = 0; b * 500 < total; b++) {
    const log = [];
    for (let i = b * 500; i < Math.min(total, (b + 1) * 500); i++) {
      const r = captured(i);
      log.push(
        create(RequestLogSchema, {
          appId: "forge", versionId: "v1", requestId: new TextEncoder().encode(r.requestId), ip: r.ip,
          startTime: BigInt(r.startTime), endTime: BigInt(r.endTime), latency: BigInt(r.endTime - r.startTime), mcycles: 0n,
          method: r.method, resource: r.resource, httpVersion: r.httpVersion, status: r.status, responseSize: BigInt(r.responseSize),
          userAgent: r.userAgent, host: r.host, urlMapEntry: r.urlMapEntry, combined: "",
          line: r.lines.map((l) => create(LogLineSchema, { time: BigInt(l.time), level: l.level, logMessage: l.message })),
        }),
      );
    }
    batches.push(create(IngestRequestSchema, { batchId: BigInt(b + 1), log }));
  }
  async function* send() {
    yield* batches;
  }
  const cpu = cpuMicros();
  const serverCpu = server.cpuMicros();
  const started = performance.now();
  let acked = 0;
  for await (const ack of client.ingest(send())) acked += ack.records;
  const seconds = (performance.now() - started) / 1000;
  const used = cpuMicros() - cpu;
  if (acked !== total) throw new Error(`acknowledged ${acked} records of ${total}`);
  const serverUsed = server.cpuMicros() - serverCpu;
  client.close();
  await server.stop();
  return { rate: total / seconds, cpuPerRequest: used / total, serverCpuPerRequest: serverUsed / total };
}

async function main() {
  console.log(`SDK batching logger vs a raw Ingest stream, ${total.toLocaleString()} requests with 3 app lines each, ${rounds} rounds:`);
  const sdk: number[] = [];
  const raw: number[] = [];
  const sdkCpu: number[] = [];
  const rawCpu: number[] = [];
  const serverCpu: number[] = [];
  for (let round = 1; round <= rounds; round++) {
    const order = round % 2 === 1 ? ["sdk", "raw"] : ["raw", "sdk"];
    const figures: Record<string, SideFigures> = {};
    for (const side of order) figures[side] = side === "sdk" ? await viaSdk() : await viaRawIngest();
    sdk.push(figures.sdk!.rate);
    raw.push(figures.raw!.rate);
    sdkCpu.push(figures.sdk!.cpuPerRequest);
    rawCpu.push(figures.raw!.cpuPerRequest);
    serverCpu.push(figures.sdk!.serverCpuPerRequest);
    console.log(
      `  round ${round} (${order[0]} first): raw Ingest ${Math.round(figures.raw!.rate).toLocaleString()} req/s, ` +
        `SDK ${Math.round(figures.sdk!.rate).toLocaleString()} req/s, ${(figures.sdk!.rate / figures.raw!.rate).toFixed(2)}x; ` +
        `client CPU ${figures.sdk!.cpuPerRequest.toFixed(1)} µs/req (SDK), ${figures.raw!.cpuPerRequest.toFixed(1)} µs/req (raw); ` +
        `server CPU ${figures.sdk!.serverCpuPerRequest.toFixed(1)} µs/req (SDK), ${figures.raw!.serverCpuPerRequest.toFixed(1)} µs/req (raw)`,
    );
  }
  const [s, r] = [median(sdk), median(raw)];
  console.log(`median of ${rounds} rounds:`);
  console.log(`  raw Ingest stream, batches built ahead (baseline): ${Math.round(r).toLocaleString()} req/s, client ${median(rawCpu).toFixed(1)} µs CPU/req`);
  console.log(`  SDK batching logger, end to end:                  ${Math.round(s).toLocaleString()} req/s, client ${median(sdkCpu).toFixed(1)} µs CPU/req   ${(s / r).toFixed(2)}x`);
  console.log(`  the SDK's own capacity on one core (1 s / its CPU per request): ${Math.round(1e6 / median(sdkCpu)).toLocaleString()} req/s`);
  console.log(`  the server's CPU per request from the SDK (process CPU ÷ requests): ${median(serverCpu).toFixed(1)} µs`);
  console.log(`  goal: >= 100,000 req/s through the SDK: ${s >= 100_000 ? "met" : "not met"}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

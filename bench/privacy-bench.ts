/**
 * Privacy costs (issue 28), two measures from one run:
 *   npm run bench:privacy -- [records per side] [stored requests] [deleted of them]
 *   (default 200000 1000000 100000)
 *
 * 1. Redaction: two `reqlog serve` on fresh SQLite databases, one with the
 *    default redaction, one with --no-default-redaction, each sent the same
 *    forge traffic (signed artifact links among it) in rounds of 20,000
 *    records (Writes of 1,000, 4 in flight), the sides alternating which goes
 *    first. Per record: the server's CPU time and the wall time. Goal: the
 *    redacting side costs ≤ 1.02× the other.
 * 2. Delete: a database of N forge requests, one in ten of them from the
 *    addresses 100.64.0.0/24 (of app forge); `reqlog serve` on it; a writer sends Writes of
 *    10 records, one in flight, first alone (the baseline), then during a
 *    Delete of the range. Goal: the Delete ≤ 10 s, every Write acknowledged
 *    meanwhile with p99 ≤ 100 ms.
 */
import { rmSync } from "node:fs";
import { dirname } from "node:path";
import { create } from "@bufbuild/protobuf";
import { type RequestLog, WriteRequestSchema } from "../gen/reqlog/v1/log_service_pb.js";
import { createLogServiceClient, type LogServiceClient } from "../src/client/log-service-client.js";
import { startChildServer, type ChildServer } from "./harness/child-server.js";
import { benchDbPath, benchStart, loadBackend, trafficRecords } from "./load.js";

const perSide = Number(process.argv[2] ?? 200_000);
const stored = Number(process.argv[3] ?? 1_000_000);
const toDelete = Number(process.argv[4] ?? 100_000);

const round = 20_000;
const batch = 1_000;
const inFlight = 4;

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const fmt = (x: number, digits = 2) => x.toLocaleString("en-US", { maximumFractionDigits: digits });

/** Sends `records` as Writes of `batch`, `inFlight` at a time. */
async function send(client: LogServiceClient, records: RequestLog[]): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < records.length) {
      const at = next;
      next += batch;
      await client.write(create(WriteRequestSchema, { log: records.slice(at, at + batch) }));
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
}

interface Side {
  name: string;
  server: ChildServer;
  client: LogServiceClient;
  db: string;
  cpuUs: number;
  wallMs: number;
}

async function redactionCost(): Promise<void> {
  const sides: Side[] = [];
  for (const [name, flags] of [
    ["default redaction", []],
    ["--no-default-redaction", ["--no-default-redaction"]],
  ] as const) {
    const db = benchDbPath("privacy-redact");
    const server = await startChildServer(["--db", db, "--listen", "127.0.0.1:0", "--http-listen", "off", ...flags]);
    sides.push({ name, server, client: createLogServiceClient({ server: server.address }), db, cpuUs: 0, wallMs: 0 });
  }
  const traffic = [...trafficRecords(perSide, 7)];
  const signed = traffic.filter((r) => r.resource.includes("sig=")).length;
  console.log(`redaction: ${fmt(perSide)} forge records a side (${fmt(signed)} signed artifact links), rounds of ${fmt(round)}, sides alternating`);
  for (let at = 0, k = 0; at < traffic.length; at += round, k++) {
    const part = traffic.slice(at, at + round);
    for (const side of k % 2 === 0 ? sides : [...sides].reverse()) {
      const cpu = side.server.cpuMicros();
      const started = performance.now();
      await send(side.client, part);
      side.wallMs += performance.now() - started;
      side.cpuUs += side.server.cpuMicros() - cpu;
    }
  }
  const [on, off] = sides as [Side, Side];
  for (const side of sides) {
    console.log(
      `  ${side.name.padEnd(24)} server CPU ${fmt(side.cpuUs / perSide)} µs/record, wall ${fmt((side.wallMs * 1000) / perSide)} µs/record (${fmt(perSide / (side.wallMs / 1000), 0)} records/s)`,
    );
  }
  const cpuRatio = on.cpuUs / off.cpuUs;
  const wallRatio = on.wallMs / off.wallMs;
  console.log(`  redaction costs ${fmt(cpuRatio, 3)}× in server CPU, ${fmt(wallRatio, 3)}× in wall time (goal ≤ 1.02×: ${cpuRatio <= 1.02 ? "met" : "missed"} by CPU)`);
  for (const side of sides) {
    side.client.close();
    await side.server.stop();
    rmSync(dirname(side.db), { recursive: true, force: true });
  }
}

/** Writes of 10 records, one in flight, until `until` says stop; each one's round trip (ms). */
async function writeWhile(client: LogServiceClient, until: () => boolean, tag: string): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = 0; !until(); i++) {
    const log = Array.from({ length: 10 }, (_, j) => ({
      appId: "forge", versionId: "v1", requestId: new TextEncoder().encode(`${tag}-${i}-${j}`), ip: "198.51.100.7",
      startTime: benchStart, endTime: benchStart + BigInt(i), latency: 0n, mcycles: 0n, method: "GET", resource: "/api/v1/teams/1",
      httpVersion: "HTTP/1.1", status: 200, responseSize: 0n, urlMapEntry: "", combined: "",
    }));
    const sent = performance.now();
    await client.write(create(WriteRequestSchema, { log }));
    latencies.push(performance.now() - sent);
  }
  return latencies;
}

const summary = (xs: number[]) => `${fmt(xs.length, 0)} Writes, p50 ${fmt(percentile(xs, 50))} ms, p99 ${fmt(percentile(xs, 99))} ms, max ${fmt(Math.max(...xs))} ms`;

async function deleteCost(): Promise<void> {
  const db = benchDbPath("privacy-delete");
  const every = Math.round(stored / toDelete);
  let i = 0;
  // One request in `every` comes from 100.64.0.0/24 (no forge traffic address is in it).
  const { backend, seconds } = await loadBackend(db, stored, undefined, 100_000, (log) => {
    const k = i++;
    // (Set in place: a proto2 message's defaults are on its prototype, which a spread would lose.)
    if (k % every === 0) {
      log.ip = `100.64.0.${k % 250}`;
      log.appId = "forge";
    }
    return log;
  });
  await backend.close();
  console.log(`delete: ${fmt(stored)} forge requests loaded in ${fmt(seconds, 1)} s, one in ${every} from 100.64.0.0/24`);
  const server = await startChildServer(["--db", db, "--listen", "127.0.0.1:0", "--http-listen", "off"]);
  const admin = createLogServiceClient({ server: server.address });
  const writer = createLogServiceClient({ server: server.address });
  try {
    const request = { appId: "forge", ip: ["100.64.0.0/24"] };
    const dry = await admin.delete({ ...request, dryRun: true });
    const baselineEnd = performance.now() + 5_000;
    const alone = await writeWhile(writer, () => performance.now() > baselineEnd, "alone");
    let done = false;
    const during = writeWhile(writer, () => done, "during");
    const started = performance.now();
    const { deleted } = await admin.delete(request);
    const deleteSeconds = (performance.now() - started) / 1000;
    done = true;
    const latencies = await during;
    console.log(`  Delete by range: ${fmt(Number(deleted), 0)} requests (dry run counted ${fmt(Number(dry.deleted), 0)}) in ${fmt(deleteSeconds)} s (goal ≤ 10 s: ${deleteSeconds <= 10 ? "met" : "missed"})`);
    console.log(`  Writes alone, 5 s:       ${summary(alone)}`);
    console.log(`  Writes during the Delete: ${summary(latencies)} (goal p99 ≤ 100 ms: ${percentile(latencies, 99) <= 100 ? "met" : "missed"}); p99 ${fmt(percentile(latencies, 99) / percentile(alone, 99), 2)}× alone`);
  } finally {
    admin.close();
    writer.close();
    await server.stop();
    rmSync(dirname(db), { recursive: true, force: true });
  }
}

if (perSide > 0) await redactionCost();
if (stored > 0) await deleteCost();

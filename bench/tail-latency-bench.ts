/**
 * Write→Tail latency: a record written over gRPC, until a Tail follower
 * receives it, against the Write round trip alone as the baseline.
 *   npm run bench:tail -- [writes]     (default 2000)
 *   npm run bench:tail -- [writes] --during-import LINES [--import-batch N]
 * With --during-import, the server is `reqlog serve` in its own process
 * (default flags) and `reqlog import` of an nginx log of LINES lines of
 * forge traffic runs beside the writes, in a process of its own: Tail's
 * latency while a bulk import runs; --import-batch is the import's --batch
 * (lines per Ingest batch, default 1000).
 */
import { spawn } from "node:child_process";
import { createWriteStream, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { RequestLogSchema, WriteRequestSchema } from "../gen/reqlog/v1/log_service_pb.js";
import { createLogServiceClient } from "../src/client/log-service-client.js";
import { formatCombined } from "../src/format/combined-line.js";
import { forgeTraffic } from "./forge-traffic.js";
import { startBenchServer } from "./harness/bench-server.js";
import { followTail } from "./harness/tail-follower.js";
import { mainScript, startChildServer } from "./harness/child-server.js";
import { benchDbPath, benchStart, loadBackend } from "./load.js";

const writes = Number(process.argv[2] ?? 2000);
const importFlag = process.argv.indexOf("--during-import");
const importLines = importFlag > 0 ? Number(process.argv[importFlag + 1] ?? 300_000) : 0;
const batchFlag = process.argv.indexOf("--import-batch");
const importBatch = batchFlag > 0 ? Number(process.argv[batchFlag + 1]) : 1000;

/** An nginx `combined` log of forge traffic in a new folder (as bench:import writes it). */
async function writeAccessLog(lines: number): Promise<string> {
  const file = join(mkdtempSync(join(tmpdir(), "reqlog-tail-import-")), "access.log");
  const out = createWriteStream(file);
  for (const record of forgeTraffic({ seed: 13, startUsec: benchStart, gapUsec: 20_000, total: lines, inProgressWindow: 0 })) {
    if (!out.write(`${formatCombined(record)}\n`)) await new Promise<void>((r) => out.once("drain", () => r()));
  }
  out.end();
  await new Promise<void>((r) => out.once("close", () => r()));
  return file;
}

/** The server and its address: in this process on a store with history, or `reqlog serve` beside an import. */
async function serve(): Promise<{ address: string; close: () => Promise<unknown>; importing?: Promise<number> }> {
  if (importLines === 0) {
    // A store with some history, as a live one would have.
    const { backend } = await loadBackend(benchDbPath("tail"), 100_000);
    const server = await startBenchServer(backend);
    server.client.close();
    return { address: server.address, close: () => server.close() };
  }
  const log = await writeAccessLog(importLines);
  const server = await startChildServer(["--db", benchDbPath("tail-import"), "--listen", "127.0.0.1:0", "--http-listen", "off"]);
  const started = performance.now();
  const child = spawn(process.execPath, [mainScript, "import", "--server", server.address, "--app", "forge", "--batch", String(importBatch), "--json", log], { stdio: ["ignore", "ignore", "inherit"] });
  const importing = new Promise<number>((resolve) => child.once("close", () => resolve((performance.now() - started) / 1000)));
  // Let the import reach its pace before the first write.
  await new Promise((r) => setTimeout(r, 2000));
  return {
    address: server.address,
    importing,
    close: async () => {
      await importing;
      await server.stop();
      rmSync(join(log, ".."), { recursive: true, force: true });
    },
  };
}

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

async function main() {
  const server = await serve();
  const writer = createLogServiceClient({ server: server.address });
  const arrived = new Map<string, number>();
  const waiters = new Map<string, () => void>();
  const tail = await followTail(server.address, "bench-tail", (id, at) => {
    arrived.set(id, at);
    waiters.get(id)?.();
  });

  const roundTrips: number[] = [];
  const toTail: number[] = [];
  for (let i = 0; i < writes; i++) {
    const id = `t${i}`;
    const seen = new Promise<void>((resolve) => waiters.set(id, resolve));
    const sent = performance.now();
    await writer.write(create(WriteRequestSchema, {
      log: [create(RequestLogSchema, {
        appId: "bench-tail", versionId: "v1", requestId: new TextEncoder().encode(id), ip: "192.0.2.1", startTime: benchStart,
        endTime: benchStart + BigInt(i), latency: 0n, mcycles: 0n, method: "GET", resource: "/api/v1/teams/1",
        httpVersion: "HTTP/1.1", status: 200, responseSize: 0n, urlMapEntry: "", combined: "",
      })],
    }));
    roundTrips.push(performance.now() - sent);
    await seen;
    toTail.push(arrived.get(id)! - sent);
    waiters.delete(id);
  }
  const importStill = server.importing && (await Promise.race([server.importing.then(() => false), Promise.resolve(true)]));
  await tail.stop();
  writer.close();
  const importSeconds = await server.importing;
  await server.close();
  const p = (xs: number[], q: number) => percentile(xs, q).toFixed(2);
  if (importSeconds !== undefined) {
    console.log(`while \`reqlog import --batch ${importBatch}\` stored ${importLines.toLocaleString()} nginx lines in ${importSeconds.toFixed(1)} s ` +
      `(${Math.round(importLines / importSeconds).toLocaleString()} lines/s; ${importStill ? "still importing when the last write was seen" : "it ended before the last write: use more lines"}):`);
  }
  console.log(`Write→Tail over ${writes} writes (one at a time, loopback):`);
  console.log(`  Write round trip (baseline):    p50 ${p(roundTrips, 50)} ms   p99 ${p(roundTrips, 99)} ms`);
  console.log(`  written → received by a Tail:   p50 ${p(toTail, 50)} ms   p99 ${p(toTail, 99)} ms   (p99 ${(percentile(toTail, 99) / percentile(roundTrips, 99)).toFixed(2)}x the round trip)`);
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

/**
 * Memory under sustained ingest: `reqlog serve` in its own process takes an
 * Ingest stream of forge traffic for a while; its resident set size is
 * sampled every second, against its size when idle as the baseline.
 *   npm run bench:rss -- [seconds]     (default 600)
 */
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { create } from "@bufbuild/protobuf";
import { type ClientDuplexStream, credentials, makeGenericClientConstructor, Metadata } from "@grpc/grpc-js";
import { type IngestAck, IngestRequestSchema, LogService } from "../gen/reqlog/v1/log_service_pb.js";
import { clientDefinition } from "../src/grpc/service-definition.js";
import { forgeTraffic } from "./forge-traffic.js";
import { startChildServer } from "./harness/child-server.js";
import { benchDbPath, benchStart } from "./load.js";

const seconds = Number(process.argv[2] ?? 600);

function rssMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"))!;
  return Number(line.split(/\s+/)[1]) / 1024;
}

async function main() {
  const server = await startChildServer(["--listen", "127.0.0.1:0", "--db", benchDbPath("rss"), "--sync", "normal"]);
  const pid = server.process.pid!;
  await new Promise((r) => setTimeout(r, 1000));
  const idle = rssMb(pid);
  const Ctor = makeGenericClientConstructor(clientDefinition(LogService), LogService.typeName);
  const client = new Ctor(server.address, credentials.createInsecure()) as unknown as Record<string, (m: Metadata) => ClientDuplexStream<unknown, IngestAck>>;
  const stream = client.ingest!(new Metadata());
  let records = 0;
  stream.on("data", (ack: IngestAck) => (records += ack.records));
  const ended = new Promise((resolve, reject) => {
    stream.on("end", resolve);
    stream.on("error", reject);
  });
  const samples: number[] = [];
  const sampler = setInterval(() => samples.push(rssMb(pid)), 1000);
  const until = Date.now() + seconds * 1000;
  let batchId = 0n;
  let batch = create(IngestRequestSchema, { batchId });
  for (const log of forgeTraffic({ seed: 3, startUsec: benchStart, gapUsec: 10_000, total: Number.MAX_SAFE_INTEGER })) {
    batch.log.push(log);
    if (batch.log.length === 500) {
      if (!stream.write(batch)) await once(stream, "drain");
      batch = create(IngestRequestSchema, { batchId: ++batchId });
      if (Date.now() > until) break;
    }
  }
  stream.end();
  await ended;
  clearInterval(sampler);
  server.process.kill("SIGTERM");
  await server.exited;
  const quarter = Math.max(1, Math.floor(samples.length / 4));
  const firstQuarter = Math.max(...samples.slice(0, quarter));
  const lastQuarter = Math.max(...samples.slice(-quarter));
  console.log(`Sustained ingest for ${seconds} s: ${records.toLocaleString()} requests (${Math.round(records / seconds).toLocaleString()}/s)`);
  console.log(`  server RSS idle (baseline) ${idle.toFixed(0)} MB; peak ${Math.max(...samples).toFixed(0)} MB (${(Math.max(...samples) / idle).toFixed(2)}x idle)`);
  console.log(`  peak in the first quarter ${firstQuarter.toFixed(0)} MB, in the last quarter ${lastQuarter.toFixed(0)} MB (flat when about equal)`);
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

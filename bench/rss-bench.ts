/**
 * Memory under sustained ingest: `reqlog serve` in its own process takes an
 * Ingest stream of forge traffic for a while; its resident set size is
 * sampled every second, against its size when idle as the baseline.
 *   npm run bench:rss -- [seconds]     (default 600)
 */
import { readFileSync } from "node:fs";
import { create } from "@bufbuild/protobuf";
import { IngestRequestSchema } from "../gen/reqlog/v1/log_service_pb.js";
import { createLogServiceClient } from "../src/client/log-service-client.js";
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
  const client = createLogServiceClient({ server: server.address });
  // Batches of 500 records, built as the stream pulls them (HTTP/2 flow control), until the time is up.
  const until = Date.now() + seconds * 1000;
  async function* batches() {
    let batchId = 0n;
    let batch = create(IngestRequestSchema, { batchId });
    for (const log of forgeTraffic({ seed: 3, startUsec: benchStart, gapUsec: 10_000, total: Number.MAX_SAFE_INTEGER })) {
      batch.log.push(log);
      if (batch.log.length === 500) {
        yield batch;
        batch = create(IngestRequestSchema, { batchId: ++batchId });
        if (Date.now() > until) return;
      }
    }
  }
  const samples: number[] = [];
  const sampler = setInterval(() => samples.push(rssMb(pid)), 1000);
  let records = 0;
  for await (const ack of client.ingest(batches())) records += ack.records;
  clearInterval(sampler);
  client.close();
  await server.stop();
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

/**
 * Usage latency on stores of very different sizes holding the same time span:
 * served from the hourly rollups, it must not grow with the stored requests.
 *   npm run bench:usage -- [small] [large]     (default 10000 10000000)
 */
import { create } from "@bufbuild/protobuf";
import { LogUsageRequestSchema, type LogUsageResponse } from "../gen/reqlog/v1/log_service_pb.js";
import { startBenchServer } from "./harness/bench-server.js";
import { benchDbPath, benchStart, loadBackend, median } from "./load.js";

const sizes = [Number(process.argv[2] ?? 10_000), Number(process.argv[3] ?? 10_000_000)];
const spanUsec = 7 * 86_400_000_000; // a week of traffic, however many requests

async function measure(n: number) {
  const started = performance.now();
  const { backend } = await loadBackend(benchDbPath(`usage-${n}`), n, (d) => process.stdout.write(`  ${d.toLocaleString()}\r`), spanUsec / n);
  const loadS = (performance.now() - started) / 1000;
  const server = await startBenchServer(backend);
  const start = Number(benchStart / 1_000_000n);
  const queries = {
    "hourly, all versions, the week": { startTime: start, endTime: start + 7 * 86400 },
    "daily, combined": { startTime: start, endTime: start + 7 * 86400, resolutionHours: 24, combineVersions: true },
    "one bucket, one version": { resolutionHours: 0, versionId: ["v42"] },
  };
  const results: Record<string, { ms: number; buckets: number; count: bigint }> = {};
  for (const [label, init] of Object.entries(queries)) {
    const request = create(LogUsageRequestSchema, { appId: "forge", ...init });
    const times: number[] = [];
    let last: LogUsageResponse | undefined;
    for (let i = 0; i < 60; i++) {
      const t = performance.now();
      last = await server.client.usage(request);
      if (i >= 10) times.push(performance.now() - t);
    }
    results[label] = { ms: median(times), buckets: last!.usage.length, count: last!.summary!.count };
  }
  await server.close();
  return { n, loadS, results };
}

async function main() {
  const runs = [];
  for (const n of sizes) {
    console.log(`loading ${n.toLocaleString()} requests over one week …`);
    runs.push(await measure(n));
    console.log(`  loaded in ${runs.at(-1)!.loadS.toFixed(0)} s`);
  }
  const [small, large] = runs as [Awaited<ReturnType<typeof measure>>, Awaited<ReturnType<typeof measure>>];
  console.log(`\nUsage latency (median of 50 calls over gRPC), ${small.n.toLocaleString()} vs ${large.n.toLocaleString()} stored requests:`);
  for (const label of Object.keys(small.results)) {
    const a = small.results[label]!;
    const b = large.results[label]!;
    console.log(
      `  ${label.padEnd(32)} ${a.ms.toFixed(2)} ms (${a.buckets} records)  vs  ${b.ms.toFixed(2)} ms (${b.buckets} records, count ${b.count})   ratio ${(b.ms / a.ms).toFixed(2)}x`,
    );
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

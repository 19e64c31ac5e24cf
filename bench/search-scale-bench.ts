/**
 * Does a selective regex Read cost what its matches cost, not what the store
 * holds? The same searches on two stores of the same forge traffic, one ten
 * times the other (1M and 10M requests by default), through the search
 * index; and one no index narrows, which a scan answers.
 *   npm run bench:search-scale -- [small] [large]     (default 1000000 10000000)
 */
import type { LogServiceClient } from "../src/client/log-service-client.js";
import { startBenchServer } from "./harness/bench-server.js";
import { benchDbPath, benchStart, loadBackend, median } from "./load.js";
import { selectivePattern, trafficApps, unindexablePattern } from "./search-patterns.js";

const sizes = [Number(process.argv[2] ?? 1_000_000), Number(process.argv[3] ?? 10_000_000)];

/** A regex over every app, first 1,000 matches of each: median ms of 7 runs (after one), and the matches. */
async function search(client: LogServiceClient, pattern: string): Promise<{ ms: number; matches: number }> {
  let matches = 0;
  const times: number[] = [];
  for (let run = 0; run < 8; run++) {
    const started = performance.now();
    matches = 0;
    for (const appId of trafficApps) {
      matches += (await client.read({ appId, count: 1000n, includeIncomplete: true, startTime: benchStart, combinedLogRegex: pattern })).log.length;
    }
    if (run > 0) times.push(performance.now() - started);
  }
  return { ms: median(times), matches };
}

async function measure(n: number) {
  console.log(`loading ${n.toLocaleString()} forge requests …`);
  const { backend, seconds } = await loadBackend(benchDbPath(`scale-${n}`), n, (d) => process.stdout.write(`  ${d.toLocaleString()}\r`));
  console.log(`  loaded in ${seconds.toFixed(0)} s (${Math.round(n / seconds).toLocaleString()} requests/s)`);
  const server = await startBenchServer(backend, { readScanRows: 100_000_000, readScanMs: 600_000 });
  const selective = await search(server.client, selectivePattern);
  const unindexable = await search(server.client, unindexablePattern);
  await server.close();
  return { n, selective, unindexable };
}

async function main() {
  const [small, large] = [await measure(sizes[0]!), await measure(sizes[1]!)];
  const line = (label: string, a: { ms: number; matches: number }, b: { ms: number; matches: number }, goal: string) =>
    console.log(
      `| ${label} | ${a.ms.toFixed(1)} ms (${a.matches}) | ${b.ms.toFixed(1)} ms (${b.matches}) | ${(b.ms / a.ms).toFixed(2)}× | ${goal} |`,
    );
  console.log(`\n| search (first 1,000 matches of each app) | ${small.n.toLocaleString()} requests | ${large.n.toLocaleString()} requests | ratio | goal |`);
  console.log("|---|---:|---:|---:|---|");
  line("selective regex, through the search index", small.selective, large.selective, "≤ 2×");
  line("5xx regex, no index narrows it (a scan)", small.unindexable, large.unindexable, "(none)");
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

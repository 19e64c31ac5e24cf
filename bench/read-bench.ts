/**
 * Read benchmark: first page and page 1000 on N stored requests (default 1M),
 * and the RE2 scan rate, through a real server and the generated client.
 *   npm run bench:read -- [requests]
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { LogReadRequestSchema, LogReadResponse } from "../gen/reqlog/v1/log_service_pb.js";
import { startBenchServer } from "./harness/bench-server.js";
import { benchDbPath, benchStart, loadBackend, median } from "./load.js";

const n = Number(process.argv[2] ?? 1_000_000);
const day = 86_400_000_000n;

async function main() {
  const path = benchDbPath("read");
  console.log(`loading ${n.toLocaleString()} forge requests into ${path} …`);
  const { backend, requestsPerSecond, seconds } = await loadBackend(path, n, (d) => process.stdout.write(`  ${d.toLocaleString()}\r`));
  console.log(`loaded in ${seconds.toFixed(1)} s (${Math.round(requestsPerSecond).toLocaleString()} requests/s through validation + store)`);

  const server = await startBenchServer(backend, { readScanRows: 100_000_000, readScanMs: 600_000 });
  const read = (init: MessageInitShape<typeof LogReadRequestSchema>) => server.client.read({ appId: "forge", ...init });
  const timed = async (f: () => Promise<LogReadResponse>) => {
    const t = performance.now();
    const r = await f();
    return { ms: performance.now() - t, r };
  };

  // The newest day of data, as an ops dashboard would ask for it.
  const newest = (await read({ count: 1n })).log[0]!.endTime;
  // (Smaller runs do not span a day: their window is everything.)
  const window = { startTime: n >= 1_000_000 ? newest - day : benchStart, endTime: newest + 1n, count: 100n };
  const first: number[] = [];
  for (let i = 0; i < 20; i++) first.push((await timed(() => read(window))).ms);

  // Walk to page 1000 through the offsets, then time that page as often as
  // the first one (both with a warm cache): depth alone is compared.
  // (Smaller runs have fewer pages: their deepest is compared.)
  const depth = Math.min(1000, Math.floor((n * 0.8) / 100));
  let offset: Uint8Array | undefined;
  for (let page = 1; page < depth; page++) {
    offset = (await read({ ...window, ...(offset ? { offset: { requestId: offset } } : {}) })).offset?.requestId;
    if (!offset) throw new Error(`ran out of pages at ${page}`);
  }
  const deep: number[] = [];
  for (let i = 0; i < 20; i++) deep.push((await timed(() => read({ ...window, offset: { requestId: offset! } }))).ms);

  // RE2 over every stored request: a selective pattern (few matches), and the
  // same scan with no pattern as the baseline.
  const scan = async (init: Parameters<typeof read>[0]) => {
    const { ms, r } = await timed(() => read({ count: 1000n, startTime: benchStart, ...init }));
    return { ms, matched: r.log.length };
  };
  const total = n;
  // A handful of matches in a million: the scan visits every row.
  const selective = await scan({
    combinedLogRegex: '"GET /api/v1/repos/ci-bot/proto/raw/go\\.mod HTTP/2\\.0" 500 0 "https://dl\\.forge\\.example/',
  });
  const catastrophic = await scan({ combinedLogRegex: "(a+)+$" });

  const f = median(first);
  const p1000 = median(deep);
  console.log("\nRead on", n.toLocaleString(), "requests (median of runs):");
  console.log(`  first page (100, one-day window): ${f.toFixed(2)} ms`);
  console.log(`  page ${depth} (same window, via offsets): ${p1000.toFixed(2)} ms   ratio to first page: ${(p1000 / f).toFixed(2)}x`);
  if (selective.matched >= 1000) console.log("  (the selective pattern filled a page: its rate below is not a full scan)");
  console.log(`  selective RE2 over all ${total.toLocaleString()}: ${selective.ms.toFixed(0)} ms, ${selective.matched} matches, ${Math.round(total / (selective.ms / 1000)).toLocaleString()} rows/s`);
  console.log(`  catastrophic pattern (a+)+$ over all: ${catastrophic.ms.toFixed(0)} ms, ${Math.round(total / (catastrophic.ms / 1000)).toLocaleString()} rows/s`);

  await server.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

/**
 * What the Stats rollups cost and what Stats takes, each side measured in the
 * same run, alternating (this VM's speed drifts by up to 2× over minutes):
 *
 * 1. Write throughput with the stats rollups against the same writes with the
 *    stats rollup step skipped: both sides wire the SQLite parts as
 *    openSqliteBackend does (keys, change log, usage rollups, request writer,
 *    one transaction a call); the only difference is `moveStats`.
 * 2. Stats for 30 days hourly, all routes, at two store sizes holding the
 *    same 30 days, in the store (what the rollups cost to read) and over gRPC.
 *
 *   npm run bench:stats -- [written] [small] [large]     (default 200000 10000 1000000)
 */
import { create } from "@bufbuild/protobuf";
import type { RequestLog } from "../gen/reqlog/v1/log_service_pb.js";
import type { PreparedRecord } from "../src/domain/records.js";
import { defaultLimits } from "../src/limits.js";
import { planStats } from "../src/query/stats-plan.js";
import { createChangeLog } from "../src/store/sqlite/change-log.js";
import { createKeys } from "../src/store/sqlite/keys.js";
import { openDatabase } from "../src/store/sqlite/open-database.js";
import { createSearchIndex } from "../src/store/sqlite/search-doc.js";
import { createStrings } from "../src/store/sqlite/strings.js";
import { createRequestWriter } from "../src/store/sqlite/request-writer.js";
import { createRollups } from "../src/store/sqlite/rollups.js";
import { prepareRequestLog } from "../src/write/prepare-request-log.js";
import { StatsRequestSchema } from "../gen/reqlog/v1/log_service_pb.js";
import { handlerRoute } from "./forge-traffic.js";
import { startBenchServer } from "./harness/bench-server.js";
import { benchDbPath, benchStart, loadBackend, median, trafficRecords } from "./load.js";

const written = Number(process.argv[2] ?? 200_000);
const sizes = [Number(process.argv[3] ?? 10_000), Number(process.argv[4] ?? 1_000_000)] as const;
/** Records a Write call carries (the figure the Stats commit measured with). */
const perCall = 140;
const rounds = 4;
const days = 30;
const spanUsec = days * 86_400_000_000;
const statsCalls = 40;

/**
 * The forge traffic with url_map_entry set as a router would set it (the
 * handler's pattern: owner and repository are parameters), so the app has a
 * few dozen routes, as the Stats goal supposes, not one per repository.
 */
function withHandlerRoute(log: RequestLog): RequestLog {
  log.urlMapEntry = handlerRoute(log.resource);
  return log;
}

/** Writes `records` in calls of `perCall`, one transaction each, as the backend's change() does; records/s. */
function writeRate(records: readonly PreparedRecord[], withStats: boolean): number {
  const db = openDatabase({ path: benchDbPath(withStats ? "stats-on" : "stats-off"), sync: "normal" });
  const keys = createKeys(db);
  const strings = createStrings(db);
  const search = createSearchIndex(db);
  const changeLog = createChangeLog(db);
  const rollups = createRollups(db);
  const steps = withStats ? rollups : { ...rollups, moveStats: () => {} };
  const writer = createRequestWriter(db, keys, strings, search, changeLog, steps);
  const call = db.transaction((batch: readonly PreparedRecord[], at: bigint) => {
    for (const record of batch) writer.writeRecord(record, at);
    steps.flush();
    changeLog.save();
  });
  const started = performance.now();
  for (let i = 0; i < records.length; i += perCall) call(records.slice(i, i + perCall), benchStart + BigInt(i) * 1000n);
  const rate = records.length / ((performance.now() - started) / 1000);
  db.close();
  return rate;
}

function benchWrites() {
  const records = [...trafficRecords(written)].map((log) => prepareRequestLog(withHandlerRoute(log), defaultLimits, "log"));
  const on: number[] = [];
  const off: number[] = [];
  for (let round = 1; round <= rounds; round++) {
    // Alternate which side meets the machine first.
    const order = round % 2 === 1 ? [true, false] : [false, true];
    for (const withStats of order) (withStats ? on : off).push(writeRate(records, withStats));
    console.log(
      `  round ${round}: stats step skipped ${Math.round(off.at(-1)!).toLocaleString()} records/s, with stats rollups ${Math.round(on.at(-1)!).toLocaleString()} records/s, ${(on.at(-1)! / off.at(-1)!).toFixed(2)}x`,
    );
  }
  const ratios = on.map((r, i) => r / off[i]!);
  console.log(`Write, ${written.toLocaleString()} records in calls of ${perCall} (synchronous=NORMAL), median of ${rounds} rounds:`);
  console.log(`  stats rollup step skipped (baseline): ${Math.round(median(off)).toLocaleString()} records/s`);
  console.log(`  with the stats rollups:               ${Math.round(median(on)).toLocaleString()} records/s   ${median(ratios).toFixed(2)}x (median of the rounds' ratios)`);
}

async function benchStats() {
  const servers = [];
  for (const n of sizes) {
    console.log(`loading ${n.toLocaleString()} requests over ${days} days …`);
    const { backend, seconds } = await loadBackend(
      benchDbPath(`stats-${n}`),
      n,
      (d) => process.stdout.write(`  ${d.toLocaleString()}\r`),
      spanUsec / n,
      withHandlerRoute,
    );
    console.log(`  loaded in ${seconds.toFixed(0)} s (${Math.round(n / seconds).toLocaleString()} requests/s)`);
    servers.push(await startBenchServer(backend));
  }
  const start = benchStart / 1_000_000n;
  const request = create(StatsRequestSchema, { appId: "forge", startTime: start, endTime: start + BigInt(days * 86400), resolutionHours: 1, topN: 10 });
  const plan = planStats(request, defaultLimits);
  const signal = new AbortController().signal;
  const inStore: number[][] = sizes.map(() => []);
  const overGrpc: number[][] = sizes.map(() => []);
  const shape = sizes.map(() => "");
  for (let i = 0; i < statsCalls + 5; i++) {
    const order = i % 2 === 0 ? [0, 1] : [1, 0];
    for (const k of order) {
      const server = servers[k]!;
      let t = performance.now();
      const result = await server.backend.store.stats(plan, signal);
      const storeMs = performance.now() - t;
      t = performance.now();
      const reply = await server.client.stats(request);
      const grpcMs = performance.now() - t;
      if (i < 5) continue; // warm-up
      inStore[k]!.push(storeMs);
      overGrpc[k]!.push(grpcMs);
      const routes = new Set(result.records.map((r) => r.route)).size;
      shape[k] = `${reply.record.length.toLocaleString()} records, ${routes} routes, ${reply.total!.requests.toLocaleString()} requests`;
    }
  }
  for (const server of servers) await server.close();
  console.log(`\nStats, ${days} days hourly, all routes, top 10 (median of ${statsCalls} calls, the stores alternating):`);
  sizes.forEach((n, k) => console.log(`  ${n.toLocaleString()} stored requests: ${shape[k]}`));
  const line = (label: string, xs: number[][]) => {
    const [a, b] = xs.map(median) as [number, number];
    console.log(`  ${label.padEnd(28)} ${a.toFixed(2)} ms  vs  ${b.toFixed(2)} ms   ratio ${(b / a).toFixed(2)}x   (goal ≤ 20 ms, flat)`);
  };
  console.log(`  ${"".padEnd(28)} ${sizes[0].toLocaleString()} vs ${sizes[1].toLocaleString()} requests`);
  line("in the store (store.stats)", inStore);
  line("over gRPC (typed client)", overGrpc);
}

async function main() {
  if (written > 0) benchWrites();
  if (sizes[1] > 0) await benchStats();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

/**
 * What the Stats rollups cost and what Stats takes, each side measured in the
 * same run, alternating (this VM's speed drifts by up to 2× over minutes):
 *
 * 1. Write throughput with the stats rollups against the same writes with the
 *    stats rollup step skipped: both sides wire the SQLite parts as
 *    openSqliteBackend does (keys, change log, usage rollups, request writer,
 *    one transaction a call); the only difference is `moveStats`.
 * 2. Stats for 30 days hourly, all routes, on stores of different sizes
 *    holding the same 30 days, in the store (`store.stats`, on a read worker)
 *    and over gRPC (the typed client, the reply encoded and decoded), in four
 *    shapes: the time series with the top lists, which is what an ops view
 *    asks; a record per hour and status class; a record per hour, route and
 *    status class; and the time series with bots left out (the hourly cells
 *    less the bots'). Beside the first, a one-bucket Usage call over gRPC, the
 *    floor any call pays on this machine at the time.
 *
 *   npm run bench:stats -- [written] [store sizes …] [--keep DIR]
 *
 * Defaults: 200000 written, stores of 10000 and 1000000 requests. With
 * --keep, a store is loaded into DIR/stats-<size>.db once and reused by later
 * runs (10 million requests take a quarter of an hour to load).
 */
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { create } from "@bufbuild/protobuf";
import { type RequestLog, StatsRequestSchema, StatsSplit } from "../gen/reqlog/v1/log_service_pb.js";
import type { PreparedRecord } from "../src/domain/records.js";
import { defaultLimits } from "../src/limits.js";
import { planStats } from "../src/query/stats-plan.js";
import { createChangeLog } from "../src/store/sqlite/write/change-log.js";
import { createKeys } from "../src/store/sqlite/rows/keys.js";
import { openDatabase } from "../src/store/sqlite/open-database.js";
import { createSearchIndex } from "../src/store/sqlite/rows/search-doc.js";
import { createStrings } from "../src/store/sqlite/rows/strings.js";
import { createRequestWriter } from "../src/store/sqlite/write/request-writer.js";
import { createCommittedWrites } from "../src/store/committed-writes.js";
import { createRollups } from "../src/store/sqlite/write/rollups.js";
import { openSqliteBackend } from "../src/store/sqlite/sqlite-backend.js";
import { prepareRequestLog } from "../src/write/prepare-request-log.js";
import { handlerRoute } from "./forge-traffic.js";
import { startBenchServer } from "./harness/bench-server.js";
import { benchDbPath, benchStart, loadBackend, median, trafficRecords } from "./load.js";

const { values: flags, positionals } = parseArgs({ options: { keep: { type: "string" } }, allowPositionals: true });
const written = Number(positionals[0] ?? 200_000);
const sizes = positionals.length > 1 ? positionals.slice(1).map(Number) : [10_000, 1_000_000];
/** Records a Write call carries (the figure the Stats commit measured with). */
const perCall = 140;
const rounds = 4;
const days = 30;
const spanUsec = days * 86_400_000_000;
const statsCalls = 40;
const warmUp = 5;

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
  const search = createSearchIndex(db, strings);
  const changeLog = createChangeLog(db);
  const rollups = createRollups(db);
  const steps = withStats ? rollups : { ...rollups, moveStats: () => {} };
  const writer = createRequestWriter(db, keys, strings, search, changeLog, steps, createCommittedWrites(), defaultLimits);
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

/** A store of `n` requests over the 30 days: loaded, or (with --keep) reopened when a run before loaded it. */
async function storeOf(n: number) {
  const path = flags.keep ? join(flags.keep, `stats-${n}.db`) : benchDbPath(`stats-${n}`);
  if (flags.keep && existsSync(path)) {
    console.log(`reopening ${path} (${n.toLocaleString()} requests over ${days} days)`);
    return openSqliteBackend({ path, sync: "normal" });
  }
  if (flags.keep) mkdirSync(flags.keep, { recursive: true });
  console.log(`loading ${n.toLocaleString()} requests over ${days} days …`);
  const { backend, seconds } = await loadBackend(path, n, (d) => process.stdout.write(`  ${d.toLocaleString()}\r`), spanUsec / n, withHandlerRoute);
  console.log(`  loaded in ${seconds.toFixed(0)} s (${Math.round(n / seconds).toLocaleString()} requests/s)`);
  return backend;
}

async function benchStats() {
  const servers = [];
  for (const n of sizes) servers.push(await startBenchServer(await storeOf(n)));
  const start = benchStart / 1_000_000n;
  const range = { appId: "forge", startTime: start, endTime: start + BigInt(days * 86400), resolutionHours: 1 };
  const shapes = [
    {
      name: "the time series (a point an hour: figures and each status class's requests) and the top-10 lists (the goal)",
      request: create(StatsRequestSchema, { ...range, split: StatsSplit.NONE, topN: 10 }),
    },
    { name: "a record per hour and status class, and the top-10 lists", request: create(StatsRequestSchema, { ...range, split: StatsSplit.CLASS, topN: 10 }) },
    { name: "a record per hour, route and status class, and the top-10 lists", request: create(StatsRequestSchema, { ...range, topN: 10 }) },
    {
      name: "the time series and the top-10 lists, bots left out",
      request: create(StatsRequestSchema, { ...range, split: StatsSplit.NONE, topN: 10, excludeUserAgentRegex: "(?i)bot|crawl|spider" }),
    },
  ];
  const signal = new AbortController().signal;
  /** A one-bucket Usage call per store, timed in the same turns: what any call over gRPC costs here at least. */
  const floor: number[][] = sizes.map(() => []);
  const usage = { appId: "forge", startTime: Number(start), endTime: Number(start) + 3600, resolutionHours: 0 };
  for (const shape of shapes) {
    const plan = planStats(shape.request, defaultLimits);
    const inStore: number[][] = sizes.map(() => []);
    const overGrpc: number[][] = sizes.map(() => []);
    const answer = sizes.map(() => "");
    for (let i = 0; i < statsCalls + warmUp; i++) {
      // The stores take turns, the first one alternating.
      const order = sizes.map((_, k) => (i % 2 === 0 ? k : sizes.length - 1 - k));
      for (const k of order) {
        const server = servers[k]!;
        let t = performance.now();
        await server.backend.store.stats(plan, signal);
        const storeMs = performance.now() - t;
        t = performance.now();
        const reply = await server.client.stats(shape.request);
        const grpcMs = performance.now() - t;
        t = performance.now();
        if (shape === shapes[0]) await server.client.usage(usage);
        const usageMs = performance.now() - t;
        if (i < warmUp) continue;
        if (shape === shapes[0]) floor[k]!.push(usageMs);
        inStore[k]!.push(storeMs);
        overGrpc[k]!.push(grpcMs);
        answer[k] =
          `${reply.record.length.toLocaleString()} records, ${reply.bucket.length} buckets, ${reply.total!.requests.toLocaleString()} requests, ` +
          `top IP ${reply.topClientIp[0]?.name ?? "-"} ${reply.topClientIp[0]?.requests ?? 0}±${reply.topClientIp[0]?.maxError ?? 0}`;
      }
    }
    console.log(`\nStats, ${days} days hourly: ${shape.name} (median of ${statsCalls} calls, the stores taking turns):`);
    sizes.forEach((n, k) => console.log(`  ${n.toLocaleString().padStart(10)} stored requests: ${answer[k]}`));
    const line = (label: string, xs: number[][], goal = "   (goal ≤ 20 ms, flat)") => {
      const ms = xs.map(median);
      const figures = ms.map((m) => `${m.toFixed(2)} ms`).join("  ");
      console.log(`  ${label.padEnd(28)} ${figures}   largest/smallest store ${(ms.at(-1)! / ms[0]!).toFixed(2)}x${goal}`);
    };
    line("in the store (store.stats)", inStore);
    line("over gRPC (typed client)", overGrpc);
    if (shape === shapes[0]) line("Usage of one bucket, gRPC", floor, "   (the floor of a call)");
  }
  for (const server of servers) await server.close();
}

async function main() {
  if (written > 0) benchWrites();
  if (sizes.length > 0 && sizes[0]! > 0) await benchStats();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

/**
 * reqlog against its peers on the same machine in one run, ClickHouse and
 * DuckDB: the same seeded forge requests written by each (reqlog's Write RPC
 * vs ClickHouse inserts, same batch sizes and calls in flight; DuckDB's
 * appender in this process; and raw better-sqlite3 inserts of the same rows
 * with reqlog's indexes and `synchronous`, in this process, as the floor of
 * a SQLite store), then the same questions asked of all three:
 * first page and page 1000 of a one-day window, a selective regex and one no
 * index can narrow, hourly usage, and disk bytes per request (with reqlog's
 * per-table breakdown). Every side is asked the same question (finished
 * requests only for pages, as reqlog's Read by default; in-progress too for
 * the regexes) and must answer with the same requests before any is timed;
 * reads are timed with the sides in turns. Usage is reqlog's rollups against
 * a GROUP BY over the peers' rows, and says so. A peer that fails to start
 * fails the bench, unless it is named with --without.
 *   npm run bench:clickhouse -- [requests] [--without clickhouse]     (default 1000000)
 * reqlog runs as `reqlog serve` in a child process, as ClickHouse does, so the
 * bench's client work shares no thread with either server.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import Database from "better-sqlite3";
import { type LogReadRequestSchema, LogUsageRequestSchema, type RequestLog } from "../gen/reqlog/v1/log_service_pb.js";
import { defaultLimits } from "../src/limits.js";
import type { ReadPlan } from "../src/query/read-plan.js";
import { openSqliteBackend } from "../src/store/sqlite/sqlite-backend.js";
import { type ClickHouseServer, startClickHouse } from "../test/helpers/clickhouse-server.js";
import { benchArgs, requiredPeer } from "./harness/bench-args.js";
import { type DuckDbPeer, openDuckDbPeer } from "./harness/duckdb-peer.js";
import {
  alternating,
  chRows,
  chString,
  clickhouseSettled,
  clickhouseTable,
  clickhouseTarget,
  type Figure,
  printTable,
  rawSqliteTarget,
  recordColumns,
  reqlogOffsetAt,
  reqlogTarget,
  serveReqlog,
  stopReqlog,
  timedRuns,
  type WriteTarget,
  walkTo,
  writeEachMeasured,
} from "./harness/peer-compare.js";
import { benchDbPath, benchStart } from "./load.js";
import { selectivePattern, trafficApps, unindexablePattern } from "./search-patterns.js";

const args = benchArgs();
const n = Number(args.positional[0] ?? 1_000_000);
const day = 86_400_000_000n;
const apps = trafficApps;

/** reqlog's database, per table and index: bytes per request (SQLite's dbstat). */
function storageBreakdown(path: string, requests: number): void {
  const db = new Database(path, { readonly: true });
  const rows = db
    .prepare("SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name HAVING bytes > 0 ORDER BY bytes DESC")
    .all() as { name: string; bytes: number }[];
  db.close();
  const total = rows.reduce((s, r) => s + r.bytes, 0);
  console.log(`\nreqlog's database per request (${requests.toLocaleString()} requests, dbstat after a checkpoint):`);
  console.log("| table or index | bytes / request |");
  console.log("|---|---:|");
  for (const r of rows) if (r.bytes / requests >= 0.05) console.log(`| ${r.name} | ${(r.bytes / requests).toFixed(1)} |`);
  console.log(`| all (the file's pages) | ${(total / requests).toFixed(1)} |`);
}

async function main() {
  const ch: ClickHouseServer | undefined = await requiredPeer(args, "clickhouse", () => startClickHouse({ name: "reqlog-bench-clickhouse-" }));
  const duckFolder = mkdtempSync(join(tmpdir(), "reqlog-bench-duckdb-"));
  const duck: DuckDbPeer = await openDuckDbPeer(duckFolder);
  const peers = { clickhouse: ch ? `ClickHouse ${ch.version}` : "ClickHouse", duckdb: `DuckDB ${duck.version}`, sqlite: "raw better-sqlite3" };
  if (ch) console.log(`ClickHouse ${ch.version} serving on loopback (data in ${ch.dataPath})`);
  console.log(`DuckDB ${duck.version} in this process (file in ${duckFolder})`);
  const figures: Figure[] = [];
  const server = await serveReqlog("main");
  const client = server.client;
  if (ch) await ch.client.command({ query: clickhouseTable("requests") });

  // Write: the same records, the same batches and calls in flight.
  let duckWrite = 0;
  for (const [batchSize, concurrency, total, seed, goal] of [
    [1000, 4, n, 42, 1.5],
    [100, 4, Math.min(n, 200_000), 43, 3],
    // App servers flushing every few requests: the small inserts ClickHouse advises against.
    [10, 8, Math.min(n, 50_000), 44, 3],
  ] as const) {
    const label = `Write, ${batchSize} records a call, ${concurrency} in flight, ${total.toLocaleString()} records (records/s)`;
    // The main data set (seed 42) is what the reads below ask about; the small-batch runs go elsewhere.
    const side = seed === 42 ? undefined : await serveReqlog(`batches-of-${batchSize}`);
    const reqlogServer = side ?? server;
    const raw = rawSqliteTarget(benchDbPath(`raw-sqlite-${batchSize}`), "normal");
    const targets: WriteTarget<unknown>[] = [reqlogTarget(reqlogServer.address, reqlogServer) as WriteTarget<unknown>, raw as WriteTarget<unknown>];
    if (ch) {
      const table = seed === 42 ? "requests" : `requests_batches_of_${batchSize}`;
      if (seed !== 42) await ch.client.command({ query: clickhouseTable(table) });
      targets.push(clickhouseTarget(ch.client, table) as WriteTarget<unknown>);
    }
    console.log(`${label}: reqlog, raw better-sqlite3 and ClickHouse in turn …`);
    const duckChunks: RequestLog[][] = [];
    const [ours, rawSqlite, peer] = await writeEachMeasured(targets, total, batchSize, concurrency, seed, async (records) => {
      if (seed === 42) duckChunks.push(records);
    });
    if (side) await stopReqlog(side);
    if (seed === 42) duckWrite = await duck.load(duckChunks.flat(), 1000);
    const rate = ours!.rate;
    console.log(
      `  reqlog ${Math.round(rate).toLocaleString()} records/s (server CPU ${ours!.cpuPerRecord!.toFixed(1)} µs a record), ` +
        `raw better-sqlite3 ${Math.round(rawSqlite!.rate).toLocaleString()} (${rawSqlite!.cpuPerRecord!.toFixed(1)} µs), ` +
        `ClickHouse ${peer ? Math.round(peer.rate).toLocaleString() : "skipped"}`,
    );
    figures.push({
      label, values: [rate, peer?.rate, seed === 42 ? duckWrite : undefined, rawSqlite!.rate], unit: "",
      goal: `≥ ${goal.toFixed(1)}× ClickHouse${seed === 42 ? ", ≥ 0.5× raw better-sqlite3" : ""}`,
      met: peer === undefined ? undefined : rate >= goal * peer.rate && (seed !== 42 || rate >= 0.5 * rawSqlite!.rate),
    });
    figures.push({
      label: `  server CPU per stored record at ${batchSize} a call (µs; process CPU ÷ records)`,
      values: [ours!.cpuPerRecord, undefined, undefined, rawSqlite!.cpuPerRecord], unit: "",
      goal: seed === 42 ? "≤ 8 µs" : undefined, met: seed === 42 ? ours!.cpuPerRecord! <= 8 : undefined,
    });
  }

  if (ch) {
    console.log("waiting for ClickHouse's merges to settle …");
    await clickhouseSettled(ch.client);
  }

  // Reads of the main data set: the newest day of app "forge".
  const read = (init: MessageInitShape<typeof LogReadRequestSchema>) => client.read({ appId: "forge", ...init });
  const newest = (await read({ count: 1n })).log[0]!.endTime;
  const from = n >= 1_000_000 ? newest - day : benchStart;
  const window = { startTime: from, endTime: newest + 1n, count: 100n };
  // Page 1000 (smaller runs have fewer pages: their deepest is compared).
  const depth = Math.min(1000, Math.floor((n * 0.8) / 100));
  const offset = await reqlogOffsetAt(read, window, (depth - 1) * 100);
  type Key = { sort_time: string | bigint; request_id: string };
  const keyset = (after: Key | undefined) =>
    after ? ` AND (sort_time < ${after.sort_time} OR (sort_time = ${after.sort_time} AND request_id < ${chString(after.request_id)}))` : "";
  // The same question on every side: finished requests only, as reqlog's Read answers by default.
  const where = `app_id = 'forge' AND finished = 1 AND sort_time >= ${from} AND sort_time < ${newest + 1n}`;
  const pageSql = (after?: Key, count = 100) =>
    `SELECT ${recordColumns}, sort_time FROM requests WHERE ${where}${keyset(after)} ORDER BY sort_time DESC, request_id DESC LIMIT ${count}`;
  const peerSides = [
    ...(ch ? [{ name: peers.clickhouse, rows: (sql: string) => chRows<Key>(ch.client, sql) }] : []),
    { name: peers.duckdb, rows: (sql: string) => duck.rows<Key>(sql) },
  ];
  // Each peer's position before page `depth`, by keyset as reqlog's offsets go.
  const deepKeys: (Key | undefined)[] = [];
  for (const peer of peerSides) deepKeys.push(await walkTo<Key>((depth - 1) * 100, async (count, after) => (await peer.rows(pageSql(after, count))).at(-1)));
  const deepRead = () => read({ ...window, offset: { requestId: offset } });
  // Every side answers with the same pages before any is timed.
  const idsOf = (ids: string[]) => ids.sort().join("\n");
  const ours = async (page: Promise<{ log: RequestLog[] }>) => idsOf((await page).log.map((l) => Buffer.from(l.requestId).toString("latin1")));
  const [oursFirstIds, oursDeepIds] = [await ours(read(window)), await ours(deepRead())];
  for (const [i, peer] of peerSides.entries()) {
    if (idsOf((await peer.rows(pageSql())).map((r) => r.request_id)) !== oursFirstIds) throw new Error(`${peer.name}'s first page differs from reqlog's`);
    if (idsOf((await peer.rows(pageSql(deepKeys[i]))).map((r) => r.request_id)) !== oursDeepIds) throw new Error(`${peer.name}'s page ${depth} differs from reqlog's`);
  }
  // All sides and both pages in turns, so that none meets the machine at a better moment (a WAL checkpointed
  // or not, a page cache warm or not, another engineer's run starting).
  const pageTimes = await alternating(5, 4, [
    () => read(window),
    ...peerSides.map((peer) => () => peer.rows(pageSql())),
    deepRead,
    ...peerSides.map((peer, i) => () => peer.rows(pageSql(deepKeys[i]))),
  ]);
  const sides = peerSides.length + 1;
  const [firstOurs, deepOurs] = [pageTimes[0]!, pageTimes[sides]!];
  const peerTime = (times: number[], offset: number, name: string) => {
    const i = peerSides.findIndex((p) => p.name === name);
    return i < 0 ? undefined : times[offset + 1 + i];
  };
  const [firstCh, deepCh] = [peerTime(pageTimes, 0, peers.clickhouse), peerTime(pageTimes, sides, peers.clickhouse)];
  const [firstDuck, deepDuck] = [peerTime(pageTimes, 0, peers.duckdb)!, peerTime(pageTimes, sides, peers.duckdb)!];
  const better = Math.min(...[firstCh, firstDuck].filter((x): x is number => x !== undefined));
  figures.push({
    label: "Read first page (100 finished, one-day window; same pages on every side) (ms)", values: [firstOurs, firstCh, firstDuck], unit: "",
    goal: "≤ 0.3× the better peer", met: firstOurs <= 0.3 * better,
  });
  figures.push({
    label: `Read page ${depth} (keyset on all; same pages on every side) (ms)`, values: [deepOurs, deepCh, deepDuck], unit: "",
    goal: `≤ 1.2× our first page: ${(deepOurs / firstOurs).toFixed(2)}×`, met: deepOurs <= 1.2 * firstOurs,
  });

  // Regexes over every stored request (in progress too, on every side), all three apps; every side must find
  // the same requests; the sides are timed in turns.
  async function regex(pattern: string, label: string, goal: string, met: (ours: number, peers: number[]) => boolean | undefined) {
    const regexSql = (fn: string, appId: string) =>
      `SELECT ${recordColumns} FROM requests WHERE app_id = ${chString(appId)} AND ${fn}(combined, ${chString(pattern)}) ORDER BY sort_time DESC, request_id DESC LIMIT 1000`;
    // DuckDB takes the pattern as a parameter (its string literals would read backslashes as they are).
    const duckSql =
      `SELECT ${recordColumns} FROM requests WHERE app_id = $app AND regexp_matches(combined, $pattern) ORDER BY sort_time DESC, request_id DESC LIMIT 1000`;
    const counters: [string, (appId: string) => Promise<number>][] = [
      ["reqlog", async (appId) => (await read({ appId, count: 1000n, includeIncomplete: true, startTime: benchStart, combinedLogRegex: pattern })).log.length],
      ...(ch ? [[peers.clickhouse, async (appId: string) => (await chRows(ch.client, regexSql("match", appId))).length] as [string, (appId: string) => Promise<number>]] : []),
      [peers.duckdb, async (appId) => (await duck.rows(duckSql, { app: appId, pattern })).length],
    ];
    const matchesOf = async (count: (appId: string) => Promise<number>) => {
      let matches = 0;
      for (const appId of apps) matches += await count(appId);
      return matches;
    };
    const oursMatches = await matchesOf(counters[0]![1]);
    for (const [name, count] of counters.slice(1)) {
      const matches = await matchesOf(count);
      if (matches !== oursMatches) throw new Error(`${pattern}: reqlog matched ${oursMatches} requests, ${name} ${matches}`);
    }
    const times = await alternating(3, 1, counters.map(([, count]) => () => matchesOf(count)));
    const byName = new Map(counters.map(([name], i) => [name, times[i]!]));
    const [onCh, onDuck] = [byName.get(peers.clickhouse), byName.get(peers.duckdb)];
    figures.push({
      label: `${label} (${oursMatches} matches on every side) (ms)`, values: [byName.get("reqlog")!, onCh, onDuck], unit: "", goal,
      met: met(byName.get("reqlog")!, [onCh, onDuck].filter((x): x is number => x !== undefined)),
    });
  }
  await regex(selectivePattern, `Selective regex over all ${n.toLocaleString()}`, "≤ 0.2× each peer", (ours, p) => p.every((x) => ours <= 0.2 * x));
  await regex(unindexablePattern, "Regex no index narrows (5xx), first 1,000 of each app", "no slower than the build before the index (npm run bench:against)", () => undefined);

  // Usage: hourly per version over the data's span, app "forge".
  const startS = Number(benchStart / 1_000_000n);
  const endS = Number(newest / 1_000_000n) + 3600;
  const usage = create(LogUsageRequestSchema, { appId: "forge", startTime: startS, endTime: endS });
  const usageSql = (hour: string) =>
    `SELECT ${hour} AS hour, version_id, count(*) AS requests, sum(bytes) AS bytes FROM requests
     WHERE app_id = 'forge' AND sort_time >= ${startS}000000 AND sort_time < ${endS}000000 GROUP BY hour, version_id`;
  const usageSides: [string, () => Promise<number>][] = [
    ["reqlog", async () => (await client.usage(usage)).usage.length],
    ...(ch ? [[peers.clickhouse, async () => (await chRows(ch.client, usageSql("intDiv(sort_time, 3600000000)"))).length] as [string, () => Promise<number>]] : []),
    [peers.duckdb, async () => (await duck.rows(usageSql("sort_time // 3600000000"))).length],
  ];
  const oursBuckets = await usageSides[0]![1]();
  for (const [name, buckets] of usageSides.slice(1)) {
    const theirs = await buckets();
    if (theirs !== oursBuckets) console.log(`  (usage buckets differ: reqlog ${oursBuckets}, ${name} ${theirs})`);
  }
  const usageTimes = await alternating(5, 10, usageSides.map(([, buckets]) => buckets));
  const usageOf = new Map(usageSides.map(([name], i) => [name, usageTimes[i]!]));
  figures.push({
    label: "Usage, hourly per version over the span: reqlog from its rollups, the peers by GROUP BY over rows (ms)",
    values: [usageOf.get("reqlog")!, usageOf.get(peers.clickhouse), usageOf.get(peers.duckdb)], unit: "",
    goal: "≤ 5 ms", met: usageOf.get("reqlog")! <= 5,
  });

  // The first page asked in-process of reqlog's store (as DuckDB is asked), without gRPC, offsets or a worker thread.
  await stopReqlog(server);
  const dbPath = server.dbPath;
  const embedded = openSqliteBackend({ path: dbPath, readWorkers: 0 });
  const firstPlan: ReadPlan = {
    appId: "forge", includeIncomplete: false, count: 100, combinedExtras: "none",
    startTime: from, endTime: newest + 1n, budget: { rows: defaultLimits.readScanRows, ms: defaultLimits.readScanMs, bytes: defaultLimits.maxReadBytes },
  };
  const firstEmbedded = await timedRuns(20, () => embedded.store.read(firstPlan, new AbortController().signal));
  await embedded.close();
  figures.push({
    label: "Read first page, in-process (store API, as DuckDB is asked) (ms)", values: [firstEmbedded, firstCh, firstDuck], unit: "",
    goal: "(for the gRPC figure's cost)",
  });

  // Disk: reqlog's file after a checkpoint; ClickHouse's table after its merges; DuckDB's file after a checkpoint.
  const db = new Database(dbPath);
  db.pragma("wal_checkpoint(TRUNCATE)");
  db.close();
  const oursBytes = statSync(dbPath).size / n;
  let chBytes: number | undefined;
  if (ch) {
    // Merged into one part, as compact as ClickHouse gets it; only active parts count (replaced
    // ones wait minutes to be deleted).
    await ch.client.command({ query: "OPTIMIZE TABLE requests FINAL" });
    const [parts] = await chRows<{ bytes: string }>(ch.client,
      "SELECT sum(bytes_on_disk) AS bytes FROM system.parts WHERE active AND database = 'default' AND table = 'requests'");
    chBytes = Number(parts!.bytes) / n;
    await ch.stop();
  }
  const duckBytes = (await duck.diskBytes()) / n;
  duck.close();
  rmSync(duckFolder, { recursive: true, force: true });
  figures.push({
    label: "Disk per request, all included (search index, rollups) (B)", values: [oursBytes, chBytes, duckBytes], unit: "",
    goal: "≤ 1.5× ClickHouse", met: chBytes === undefined ? undefined : oursBytes <= 1.5 * chBytes,
  });

  printTable(figures, ["reqlog", peers.clickhouse, peers.duckdb, peers.sqlite]);
  storageBreakdown(dbPath, n);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

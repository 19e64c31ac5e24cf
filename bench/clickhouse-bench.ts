/**
 * reqlog against its peers on the same machine in one run, ClickHouse and
 * DuckDB: the same seeded forge requests written by each (reqlog's Write RPC
 * vs ClickHouse inserts, same batch sizes and calls in flight; DuckDB's
 * appender in this process), then the same questions asked of all three:
 * first page and page 1000 of a one-day window, a selective regex and one no
 * index can narrow, hourly usage, and disk bytes per request (with reqlog's
 * per-table breakdown).
 *   npm run bench:clickhouse -- [requests]     (default 1000000)
 * reqlog runs as `reqlog serve` in a child process, as ClickHouse does, so the
 * bench's client work shares no thread with either server.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { create, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import type { ClickHouseClient } from "@clickhouse/client";
import Database from "better-sqlite3";
import {
  type LogReadRequestSchema,
  LogUsageRequestSchema,
  type RequestLog,
  RequestLogSchema,
  WriteRequestSchema,
} from "../gen/reqlog/v1/log_service_pb.js";
import { createLogServiceClient, type LogServiceClient } from "../src/client/log-service-client.js";
import { formatCombined } from "../src/format/combined-line.js";
import { defaultLimits } from "../src/limits.js";
import type { ReadPlan } from "../src/query/read-plan.js";
import { openSqliteBackend } from "../src/store/sqlite/sqlite-backend.js";
import { type ClickHouseServer, startClickHouse } from "../test/helpers/clickhouse-server.js";
import { type ChildServer, startChildServer } from "./harness/child-server.js";
import { type DuckDbPeer, openDuckDbPeer } from "./harness/duckdb-peer.js";
import { createEncodedWriter } from "./harness/encoded-writer.js";
import { benchDbPath, benchStart, median, trafficRecords } from "./load.js";
import { selectivePattern, trafficApps, unindexablePattern } from "./search-patterns.js";

const n = Number(process.argv[2] ?? 1_000_000);
const day = 86_400_000_000n;
const apps = trafficApps;

async function timedRuns(runs: number, f: () => Promise<unknown>): Promise<number> {
  await f(); // warm
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await f();
    times.push(performance.now() - t);
  }
  return median(times);
}

const sortTime = (log: RequestLog) => (log.finished ? log.endTime : log.startTime);

/** The row ClickHouse stores for a record: its fields, the combined line, its serialized size and lines as a Nested column. */
function clickhouseRow(log: RequestLog) {
  return {
    app_id: log.appId,
    module_id: log.moduleId,
    version_id: log.versionId,
    request_id: Buffer.from(log.requestId).toString("latin1"),
    ip: log.ip,
    nickname: log.nickname,
    start_time: Number(log.startTime),
    end_time: Number(log.endTime),
    sort_time: Number(sortTime(log)),
    latency: Number(log.latency),
    mcycles: Number(log.mcycles),
    method: log.method,
    resource: log.resource,
    http_version: log.httpVersion,
    status: log.status,
    response_size: Number(log.responseSize),
    referrer: log.referrer,
    user_agent: log.userAgent,
    combined: log.combined || formatCombined(log),
    host: log.host,
    replica_index: log.replicaIndex,
    finished: log.finished ? 1 : 0,
    bytes: toBinary(RequestLogSchema, log).length,
    "line.time": log.line.map((l) => Number(l.time)),
    "line.level": log.line.map((l) => l.level),
    "line.message": log.line.map((l) => l.logMessage),
  };
}

const clickhouseTable = (name: string) => `
  CREATE TABLE ${name} (
    app_id String, module_id String, version_id String, request_id String, ip String, nickname String,
    start_time UInt64, end_time UInt64, sort_time UInt64, latency UInt64, mcycles UInt64,
    method String, resource String, http_version String, status Int32, response_size UInt64,
    referrer String, user_agent String, combined String, host String, replica_index Int32, finished UInt8,
    bytes UInt32,
    line Nested(time UInt64, level Int32, message String)
  ) ENGINE = MergeTree ORDER BY (app_id, sort_time, request_id)`;

interface WriteTarget<T> {
  /** The bytes the client sends, built ahead (not timed). */
  prepare(batch: RequestLog[]): T;
  write(prepared: T): Promise<void>;
}

/**
 * Sends `total` records in batches of `batchSize`, `concurrency` calls in
 * flight, to each target in turn, 100,000 records at a time, the side that
 * goes first alternating: both meet the machine in the same state (this
 * VM's disk, page cache and neighbours drift over minutes). Each side's
 * request bodies are encoded before the clock starts (reqlog's protobuf,
 * ClickHouse's JSONEachRow), so what is timed is each server receiving,
 * storing and answering. `onChunk` sees each chunk (untimed). Returns each
 * target's records/s.
 */
async function writeEach(
  targets: WriteTarget<unknown>[],
  total: number,
  batchSize: number,
  concurrency: number,
  seed: number,
  onChunk?: (records: RequestLog[]) => Promise<void>,
): Promise<number[]> {
  const chunk = 100_000;
  const records = trafficRecords(total, seed);
  const sendingMs = targets.map(() => 0);
  for (let done = 0, round = 0; done < total; done += chunk, round++) {
    const chunkRecords: RequestLog[] = [];
    for (let i = 0; i < Math.min(chunk, total - done); i++) chunkRecords.push(records.next().value as RequestLog);
    const batches: RequestLog[][] = [];
    for (let i = 0; i < chunkRecords.length; i += batchSize) batches.push(chunkRecords.slice(i, i + batchSize));
    const order = targets.map((_, t) => t);
    if (round % 2 === 1) order.reverse();
    for (const t of order) {
      const target = targets[t]!;
      const prepared = batches.map((b) => target.prepare(b));
      const started = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < prepared.length) await target.write(prepared[next++]!);
        }),
      );
      sendingMs[t]! += performance.now() - started;
    }
    await onChunk?.(chunkRecords);
    process.stdout.write(`  ${(done + chunkRecords.length).toLocaleString()}\r`);
  }
  return sendingMs.map((ms) => total / (ms / 1000));
}

/** Waits until ClickHouse has no merge running (at most 5 minutes), so its background work does not weigh on what is timed next. */
async function clickhouseSettled(ch: ClickHouseClient): Promise<void> {
  const deadline = Date.now() + 300_000;
  while (Date.now() < deadline) {
    const [row] = await chRows<{ n: string }>(ch, "SELECT count() AS n FROM system.merges");
    if (Number(row!.n) === 0) return;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

function reqlogTarget(address: string): WriteTarget<Uint8Array> & { close(): void } {
  const writer = createEncodedWriter(address);
  return {
    prepare: (batch) => writer.encode(create(WriteRequestSchema, { log: batch })),
    async write(encoded) {
      await writer.write(encoded);
    },
    close: writer.close,
  };
}

/** ClickHouse's rows as the JSONEachRow body of an INSERT, built ahead like reqlog's request bodies. */
function clickhouseTarget(ch: ClickHouseClient, table: string): WriteTarget<string> {
  return {
    prepare: (batch) => batch.map((log) => JSON.stringify(clickhouseRow(log))).join("\n"),
    async write(body) {
      const result = await ch.exec({ query: `INSERT INTO ${table} FORMAT JSONEachRow`, values: Readable.from([body]) });
      result.stream.resume();
      await new Promise((resolve) => result.stream.once("end", resolve));
    },
  };
}

async function chRows<T>(ch: ClickHouseClient, query: string): Promise<T[]> {
  return (await (await ch.query({ query, format: "JSONEachRow" })).json()) as T[];
}

const str = (s: string) => `'${s.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
const recordColumns =
  "app_id, module_id, version_id, request_id, ip, nickname, start_time, end_time, latency, mcycles, method, resource, " +
  "http_version, status, response_size, referrer, user_agent, combined, host, replica_index, finished";

/** `reqlog serve` in a child process, on a fresh database file, with a client of it. */
type ReqlogChild = ChildServer & { dbPath: string; client: LogServiceClient };

async function serveReqlog(name: string): Promise<ReqlogChild> {
  const dbPath = benchDbPath(name);
  const server = await startChildServer([
    "--db", dbPath, "--listen", "127.0.0.1:0", "--log-level", "info", "--sync", "normal",
    "--read-scan-rows", "100000000", "--read-scan-ms", "600000",
  ]);
  process.once("exit", () => server.process.kill("SIGKILL"));
  return { ...server, dbPath, client: createLogServiceClient({ server: server.address }) };
}

/** Closes the client, then stops `reqlog serve` gracefully. */
async function stopReqlog(server: ReqlogChild): Promise<void> {
  server.client.close();
  await server.stop();
}

interface Figure {
  label: string;
  ours: number;
  clickhouse?: number;
  duckdb?: number;
  unit: string;
  goal: string;
  /** Whether the goal is met, when the figures decide it. */
  met?: boolean;
}

function printTable(figures: Figure[], peers: { clickhouse: string; duckdb: string }) {
  const fmt = (x: number | undefined, unit: string) =>
    x === undefined ? "—" : `${x >= 100 ? Math.round(x).toLocaleString() : x.toFixed(2)} ${unit}`;
  const ratio = (ours: number, peer: number | undefined) => (peer === undefined ? "—" : `${(ours / peer).toFixed(2)}×`);
  console.log(`\n| measure | reqlog | ${peers.clickhouse} | ${peers.duckdb} | vs ClickHouse | vs DuckDB | goal | met |`);
  console.log("|---|---:|---:|---:|---:|---:|---|---|");
  for (const f of figures) {
    console.log(
      `| ${f.label} | ${fmt(f.ours, f.unit)} | ${fmt(f.clickhouse, f.unit)} | ${fmt(f.duckdb, f.unit)} | ` +
        `${ratio(f.ours, f.clickhouse)} | ${ratio(f.ours, f.duckdb)} | ${f.goal} | ${f.met === undefined ? "" : f.met ? "yes" : "no"} |`,
    );
  }
}

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
  const ch: ClickHouseServer | undefined = await startClickHouse({ name: "reqlog-bench-clickhouse-" }).catch((err: Error) => {
    console.log(`${err.message}\nthe ClickHouse comparisons are skipped`);
    return undefined;
  });
  const duckFolder = mkdtempSync(join(tmpdir(), "reqlog-bench-duckdb-"));
  const duck: DuckDbPeer = await openDuckDbPeer(duckFolder);
  const peers = { clickhouse: ch ? `ClickHouse ${ch.version}` : "ClickHouse", duckdb: `DuckDB ${duck.version}` };
  if (ch) console.log(`ClickHouse ${ch.version} serving on loopback (data in ${ch.dataPath})`);
  console.log(`DuckDB ${duck.version} in this process (file in ${duckFolder})`);
  const figures: Figure[] = [];
  const server = await serveReqlog("main");
  const client = server.client;
  if (ch) await ch.client.command({ query: clickhouseTable("requests") });

  // Write: the same records, the same batches and calls in flight.
  let duckWrite = 0;
  for (const [batchSize, concurrency, total, seed, goal] of [
    [1000, 4, n, 42, 1.0],
    [100, 4, Math.min(n, 200_000), 43, 1.5],
    // App servers flushing every few requests: the small inserts ClickHouse advises against.
    [10, 8, Math.min(n, 50_000), 44, 1.5],
  ] as const) {
    const label = `Write, ${batchSize} records a call, ${concurrency} in flight, ${total.toLocaleString()} records (records/s)`;
    // The main data set (seed 42) is what the reads below ask about; the small-batch runs go elsewhere.
    const side = seed === 42 ? undefined : await serveReqlog(`batches-of-${batchSize}`);
    const ours = reqlogTarget((side ?? server).address);
    const targets: WriteTarget<unknown>[] = [ours as WriteTarget<unknown>];
    if (ch) {
      const table = seed === 42 ? "requests" : `requests_batches_of_${batchSize}`;
      if (seed !== 42) await ch.client.command({ query: clickhouseTable(table) });
      targets.push(clickhouseTarget(ch.client, table) as WriteTarget<unknown>);
    }
    console.log(`${label}: reqlog and ClickHouse in turn …`);
    const duckChunks: RequestLog[][] = [];
    const [rate, peer] = (await writeEach(targets, total, batchSize, concurrency, seed, async (records) => {
      if (seed === 42) duckChunks.push(records);
    })) as [number, number | undefined];
    ours.close();
    if (side) await stopReqlog(side);
    if (seed === 42) duckWrite = await duck.load(duckChunks.flat(), 1000);
    console.log(`  reqlog ${Math.round(rate).toLocaleString()} records/s, ClickHouse ${peer ? Math.round(peer).toLocaleString() : "skipped"}`);
    figures.push({
      label, ours: rate, clickhouse: peer, duckdb: seed === 42 ? duckWrite : undefined, unit: "",
      goal: `≥ ${goal.toFixed(1)}× ClickHouse`, met: peer === undefined ? undefined : rate >= goal * peer,
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
  const firstOurs = await timedRuns(20, () => read(window));
  // Page 1000 (smaller runs have fewer pages: their deepest is compared).
  const depth = Math.min(1000, Math.floor((n * 0.8) / 100));
  let offset: Uint8Array | undefined;
  for (let page = 1; page < depth; page++) {
    offset = (await read({ ...window, ...(offset ? { offset: { requestId: offset } } : {}) })).offset?.requestId;
    if (!offset) throw new Error(`reqlog ran out of pages at ${page}`);
  }
  const deepOurs = await timedRuns(20, () => read({ ...window, offset: { requestId: offset! } }));

  type Key = { sort_time: string | bigint; request_id: string };
  const keyset = (after: Key | undefined) =>
    after ? ` AND (sort_time < ${after.sort_time} OR (sort_time = ${after.sort_time} AND request_id < ${str(after.request_id)}))` : "";
  const where = `app_id = 'forge' AND sort_time >= ${from} AND sort_time < ${newest + 1n}`;
  const pageSql = (after?: Key) => `SELECT ${recordColumns}, sort_time FROM requests WHERE ${where}${keyset(after)} ORDER BY sort_time DESC, request_id DESC LIMIT 100`;
  /** First page and page `depth` on a peer, by keyset as reqlog's offsets do. */
  async function pages(rows: (sql: string) => Promise<Key[]>): Promise<[number, number]> {
    const first = await timedRuns(20, () => rows(pageSql()));
    let last: Key | undefined;
    for (let p = 1; p < depth; p++) {
      const page = await rows(pageSql(last));
      if (page.length === 0) throw new Error(`a peer ran out of pages at ${p}`);
      last = page.at(-1)!;
    }
    return [first, await timedRuns(20, () => rows(pageSql(last)))];
  }
  const [firstCh, deepCh] = ch ? await pages((sql) => chRows<Key>(ch.client, sql)) : [undefined, undefined];
  const [firstDuck, deepDuck] = await pages((sql) => duck.rows<Key>(sql));
  const better = Math.min(...[firstCh, firstDuck].filter((x): x is number => x !== undefined));
  figures.push({
    label: "Read first page (100, one-day window) (ms)", ours: firstOurs, clickhouse: firstCh, duckdb: firstDuck, unit: "",
    goal: "≤ 0.3× the better peer", met: firstOurs <= 0.3 * better,
  });
  figures.push({
    label: `Read page ${depth} (keyset on all) (ms)`, ours: deepOurs, clickhouse: deepCh, duckdb: deepDuck, unit: "",
    goal: `≤ 1.2× our first page: ${(deepOurs / firstOurs).toFixed(2)}×`, met: deepOurs <= 1.2 * firstOurs,
  });

  // Regexes over every stored request, all three apps; every side must find the same requests.
  async function regex(pattern: string, label: string, goal: string, met: (ours: number, peers: number[]) => boolean) {
    let oursMatches = 0;
    const ours = await timedRuns(3, async () => {
      oursMatches = 0;
      for (const appId of apps) {
        oursMatches += (await read({ appId, count: 1000n, includeIncomplete: true, startTime: benchStart, combinedLogRegex: pattern })).log.length;
      }
    });
    const peerRun = async (count: (appId: string) => Promise<number>) => {
      let matches = 0;
      const ms = await timedRuns(3, async () => {
        matches = 0;
        for (const appId of apps) matches += await count(appId);
      });
      if (matches !== oursMatches) throw new Error(`${pattern}: reqlog matched ${oursMatches} requests, a peer ${matches}`);
      return ms;
    };
    const regexSql = (fn: string, appId: string) =>
      `SELECT ${recordColumns} FROM requests WHERE app_id = ${str(appId)} AND ${fn}(combined, ${str(pattern)}) ORDER BY sort_time DESC, request_id DESC LIMIT 1000`;
    const onCh = ch ? await peerRun(async (appId) => (await chRows(ch.client, regexSql("match", appId))).length) : undefined;
    // DuckDB takes the pattern as a parameter (its string literals would read backslashes as they are).
    const duckSql =
      `SELECT ${recordColumns} FROM requests WHERE app_id = $app AND regexp_matches(combined, $pattern) ORDER BY sort_time DESC, request_id DESC LIMIT 1000`;
    const onDuck = await peerRun(async (appId) => (await duck.rows(duckSql, { app: appId, pattern })).length);
    figures.push({
      label: `${label} (${oursMatches} matches) (ms)`, ours, clickhouse: onCh, duckdb: onDuck, unit: "", goal,
      met: met(ours, [onCh, onDuck].filter((x): x is number => x !== undefined)),
    });
  }
  await regex(selectivePattern, `Selective regex over all ${n.toLocaleString()}`, "≤ 0.2× each peer", (ours, p) => p.every((x) => ours <= 0.2 * x));
  await regex(unindexablePattern, "Regex no index narrows (5xx), first 1,000 of each app", "no slower than before (docs)", () => true);

  // Usage: hourly per version over the data's span, app "forge".
  const startS = Number(benchStart / 1_000_000n);
  const endS = Number(newest / 1_000_000n) + 3600;
  const usage = create(LogUsageRequestSchema, { appId: "forge", startTime: startS, endTime: endS });
  let oursBuckets = 0;
  const usageOurs = await timedRuns(50, async () => {
    oursBuckets = (await client.usage(usage)).usage.length;
  });
  const usageSql = (hour: string) =>
    `SELECT ${hour} AS hour, version_id, count(*) AS requests, sum(bytes) AS bytes FROM requests
     WHERE app_id = 'forge' AND sort_time >= ${startS}000000 AND sort_time < ${endS}000000 GROUP BY hour, version_id`;
  const usageRun = async (rows: () => Promise<unknown[]>) => {
    let buckets = 0;
    const ms = await timedRuns(50, async () => {
      buckets = (await rows()).length;
    });
    if (buckets !== oursBuckets) console.log(`  (usage buckets differ: reqlog ${oursBuckets}, a peer ${buckets})`);
    return ms;
  };
  const usageCh = ch ? await usageRun(() => chRows(ch.client, usageSql("intDiv(sort_time, 3600000000)"))) : undefined;
  const usageDuck = await usageRun(() => duck.rows(usageSql("sort_time // 3600000000")));
  figures.push({ label: "Usage, hourly per version over the span (ms)", ours: usageOurs, clickhouse: usageCh, duckdb: usageDuck, unit: "", goal: "≤ 5 ms", met: usageOurs <= 5 });

  // The first page asked in-process of reqlog's store (as DuckDB is asked), without gRPC, offsets or a worker thread.
  await stopReqlog(server);
  const dbPath = server.dbPath;
  const embedded = openSqliteBackend({ path: dbPath, readWorkers: 0 });
  const firstPlan: ReadPlan = {
    appId: "forge", includeIncomplete: false, count: 100, combinedExtras: "none",
    startTime: from, endTime: newest + 1n, budget: { rows: defaultLimits.readScanRows, ms: defaultLimits.readScanMs },
  };
  const firstEmbedded = await timedRuns(20, () => embedded.store.read(firstPlan, new AbortController().signal));
  await embedded.close();
  figures.push({
    label: "Read first page, in-process (store API, as DuckDB is asked) (ms)", ours: firstEmbedded, duckdb: firstDuck, unit: "",
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
    label: "Disk per request, all included (search index, rollups) (B)", ours: oursBytes, clickhouse: chBytes, duckdb: duckBytes, unit: "",
    goal: "≤ 1.5× ClickHouse", met: chBytes === undefined ? undefined : oursBytes <= 1.5 * chBytes,
  });

  printTable(figures, peers);
  storageBreakdown(dbPath, n);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

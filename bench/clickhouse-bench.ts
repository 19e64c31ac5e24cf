/**
 * reqlog against ClickHouse on the same machine in one run: the same seeded
 * forge requests written by each (reqlog's Write RPC vs @clickhouse/client
 * inserts, same batch sizes and concurrency), then the same questions asked
 * of both: first page and page 1000 of a one-day window, a selective regex,
 * hourly usage, and disk bytes per request.
 *   npm run bench:clickhouse -- [requests]     (default 1000000)
 * reqlog runs as `reqlog serve` in a child process, as ClickHouse does, so the
 * bench's client work shares no thread with either server.
 */
import { statSync } from "node:fs";
import { create, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import type { ClickHouseClient } from "@clickhouse/client";
import Database from "better-sqlite3";
import {
  type LogReadRequestSchema,
  LogUsageRequestSchema,
  type RequestLog,
  RequestLogSchema,
  type WriteRequest,
  WriteRequestSchema,
} from "../gen/reqlog/v1/log_service_pb.js";
import { createLogServiceClient, type LogServiceClient } from "../src/client/log-service-client.js";
import { formatCombined } from "../src/format/combined-line.js";
import { type ClickHouseServer, startClickHouse } from "../test/helpers/clickhouse-server.js";
import { type ChildServer, startChildServer } from "./harness/child-server.js";
import { benchDbPath, benchStart, trafficRecords, median } from "./load.js";

const n = Number(process.argv[2] ?? 1_000_000);
const day = 86_400_000_000n;
const apps = ["forge", "forge-staging", "pages"];
/** Few matches in a million: both sides visit every row. */
const selectivePattern = '"GET /api/v1/repos/ci-bot/proto/raw/go\\.mod HTTP/2\\.0" 500 0 "https://dl\\.forge\\.example/';

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
  /** What the client holds before it sends (built ahead, not timed). */
  prepare(batch: RequestLog[]): T;
  write(prepared: T): Promise<void>;
}

/**
 * Sends `total` records in batches of `batchSize`, `concurrency` calls in
 * flight, to each target in turn, 100,000 records at a time: both meet the
 * machine in the same state (this VM's disk and page cache drift over
 * minutes). Records are built ahead, so only sending is timed. Returns each
 * target's records/s.
 */
async function writeEach(
  targets: WriteTarget<unknown>[],
  total: number,
  batchSize: number,
  concurrency: number,
  seed: number,
): Promise<number[]> {
  const chunk = 100_000;
  const records = trafficRecords(total, seed);
  const sendingMs = targets.map(() => 0);
  for (let done = 0; done < total; done += chunk) {
    const batches: RequestLog[][] = [];
    for (let i = 0; i < Math.min(chunk, total - done); i += batchSize) {
      const batch: RequestLog[] = [];
      for (let k = 0; k < batchSize; k++) {
        const next = records.next();
        if (next.done) break;
        batch.push(next.value);
      }
      if (batch.length > 0) batches.push(batch);
    }
    for (const [t, target] of targets.entries()) {
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
    process.stdout.write(`  ${(done + Math.min(chunk, total - done)).toLocaleString()}\r`);
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

function reqlogTarget(client: LogServiceClient): WriteTarget<WriteRequest> {
  return {
    prepare: (batch) => create(WriteRequestSchema, { log: batch }),
    async write(request) {
      const r = await client.write(request);
      if (r.records !== request.log.length) throw new Error(`reqlog stored ${r.records} of ${request.log.length} records`);
    },
  };
}

/** ClickHouse's rows are built ahead too (combined line, size): its client serializes them as JSONEachRow when it sends. */
function clickhouseTarget(ch: ClickHouseClient, table: string): WriteTarget<ReturnType<typeof clickhouseRow>[]> {
  return {
    prepare: (batch) => batch.map(clickhouseRow),
    async write(rows) {
      await ch.insert({ table, values: rows, format: "JSONEachRow" });
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
  peer?: number;
  unit: string;
  /** The goal, as the highest (or lowest) ratio ours/peer allowed. */
  goal?: string;
}

function printTable(figures: Figure[], peerName: string) {
  const fmt = (x: number | undefined, unit: string) =>
    x === undefined ? "skipped" : `${x >= 100 ? Math.round(x).toLocaleString() : x.toFixed(2)} ${unit}`;
  console.log(`\n| measure | reqlog | ${peerName} | reqlog / ${peerName} | goal |`);
  console.log("|---|---:|---:|---:|---|");
  for (const f of figures) {
    const ratio = f.peer === undefined ? "—" : `${(f.ours / f.peer).toFixed(2)}×`;
    console.log(`| ${f.label} | ${fmt(f.ours, f.unit)} | ${fmt(f.peer, f.unit)} | ${ratio} | ${f.goal ?? ""} |`);
  }
}

async function main() {
  const ch: ClickHouseServer | undefined = await startClickHouse({ name: "reqlog-bench-clickhouse-" }).catch((err: Error) => {
    console.log(`${err.message}\nthe ClickHouse comparisons are skipped`);
    return undefined;
  });
  const peerName = ch ? `ClickHouse ${ch.version}` : "ClickHouse";
  if (ch) console.log(`ClickHouse ${ch.version} serving on loopback (data in ${ch.dataPath})`);
  const figures: Figure[] = [];
  const dbName = "main";
  const server = await serveReqlog(dbName);
  const client = server.client;
  if (ch) await ch.client.command({ query: clickhouseTable("requests") });

  // Write: the same records, the same batches and calls in flight.
  for (const [batchSize, concurrency, total, seed] of [
    [1000, 4, n, 42],
    [100, 4, Math.min(n, 200_000), 43],
    // App servers flushing every few requests: the small inserts ClickHouse advises against.
    [10, 8, Math.min(n, 50_000), 44],
  ] as const) {
    const label = `Write, ${batchSize} records per call, ${concurrency} calls in flight (${total.toLocaleString()} records)`;
    // The main data set (seed 42) is what the reads below ask about; the small-batch run goes elsewhere.
    const side = seed === 42 ? undefined : await serveReqlog(`batches-of-${batchSize}`);
    const targets: WriteTarget<unknown>[] = [reqlogTarget((side ?? server).client) as WriteTarget<unknown>];
    if (ch) {
      const table = seed === 42 ? "requests" : `requests_batches_of_${batchSize}`;
      if (seed !== 42) await ch.client.command({ query: clickhouseTable(table) });
      targets.push(clickhouseTarget(ch.client, table) as WriteTarget<unknown>);
    }
    console.log(`${label}: reqlog and ClickHouse in turn …`);
    const [ours, peer] = (await writeEach(targets, total, batchSize, concurrency, seed)) as [number, number | undefined];
    if (side) await stopReqlog(side);
    console.log(`  reqlog ${Math.round(ours).toLocaleString()} records/s, ClickHouse ${peer ? Math.round(peer).toLocaleString() : "skipped"}`);
    figures.push({ label, ours, peer, unit: "records/s", goal: "≥ 1.5× (higher is better)" });
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

  let firstPeer: number | undefined;
  let deepPeer: number | undefined;
  if (ch) {
    const where = `app_id = 'forge' AND sort_time >= ${from} AND sort_time < ${newest + 1n}`;
    const page = (after?: { sort_time: string; request_id: string }) =>
      chRows<{ sort_time: string; request_id: string }>(
        ch.client,
        `SELECT ${recordColumns}, sort_time FROM requests WHERE ${where}` +
          (after ? ` AND (sort_time < ${after.sort_time} OR (sort_time = ${after.sort_time} AND request_id < ${str(after.request_id)}))` : "") +
          " ORDER BY sort_time DESC, request_id DESC LIMIT 100",
      );
    firstPeer = await timedRuns(20, () => page());
    // Keyset paging, as reqlog's offsets do: page 1000 starts after the last row of page 999.
    let last: { sort_time: string; request_id: string } | undefined;
    for (let p = 1; p < depth; p++) {
      const rows = await page(last);
      if (rows.length === 0) throw new Error(`ClickHouse ran out of pages at ${p}`);
      last = rows.at(-1)!;
    }
    deepPeer = await timedRuns(20, () => page(last));
  }
  figures.push({ label: "Read first page (100, one-day window)", ours: firstOurs, peer: firstPeer, unit: "ms", goal: "≤ 0.3×" });
  figures.push({ label: `Read page ${depth} (keyset on both)`, ours: deepOurs, peer: deepPeer, unit: "ms", goal: `ours ≤ 1.2× our first page: ${(deepOurs / firstOurs).toFixed(2)}×` });

  // A selective regex over every stored request, all three apps.
  let oursMatches = 0;
  const regexOurs = await timedRuns(3, async () => {
    oursMatches = 0;
    for (const appId of apps) {
      oursMatches += (await read({ appId, count: 1000n, includeIncomplete: true, startTime: benchStart, combinedLogRegex: selectivePattern })).log.length;
    }
  });
  let regexPeer: number | undefined;
  if (ch) {
    let peerMatches = 0;
    regexPeer = await timedRuns(3, async () => {
      peerMatches = 0;
      for (const appId of apps) {
        peerMatches += (await chRows(ch.client,
          `SELECT ${recordColumns} FROM requests WHERE app_id = ${str(appId)} AND match(combined, ${str(selectivePattern)}) ORDER BY sort_time DESC, request_id DESC LIMIT 1000`)).length;
      }
    });
    if (peerMatches !== oursMatches) throw new Error(`the regex matched ${oursMatches} requests in reqlog and ${peerMatches} in ClickHouse`);
  }
  figures.push({ label: `Selective regex over all ${n.toLocaleString()} (${oursMatches} matches)`, ours: regexOurs, peer: regexPeer, unit: "ms", goal: "≤ 2×" });

  // Usage: hourly per version over the data's span, app "forge".
  const startS = Number(benchStart / 1_000_000n);
  const endS = Number(newest / 1_000_000n) + 3600;
  const usage = create(LogUsageRequestSchema, { appId: "forge", startTime: startS, endTime: endS });
  let oursBuckets = 0;
  const usageOurs = await timedRuns(50, async () => {
    oursBuckets = (await client.usage(usage)).usage.length;
  });
  let usagePeer: number | undefined;
  if (ch) {
    let peerBuckets = 0;
    usagePeer = await timedRuns(50, async () => {
      peerBuckets = (await chRows(ch.client,
        `SELECT intDiv(sort_time, 3600000000) AS hour, version_id, count() AS requests, sum(bytes) AS bytes FROM requests
         WHERE app_id = 'forge' AND sort_time >= ${startS}000000 AND sort_time < ${endS}000000 GROUP BY hour, version_id`)).length;
    });
    if (peerBuckets !== oursBuckets) console.log(`  (usage buckets differ: reqlog ${oursBuckets}, ClickHouse ${peerBuckets})`);
  }
  figures.push({ label: "Usage, hourly per version over the span", ours: usageOurs, peer: usagePeer, unit: "ms", goal: "≤ 5 ms, flat in size" });

  // Disk: reqlog's file after a checkpoint; ClickHouse's table folder after its merges.
  await stopReqlog(server);
  const dbPath = server.dbPath;
  const db = new Database(dbPath);
  db.pragma("wal_checkpoint(TRUNCATE)");
  db.close();
  const oursBytes = statSync(dbPath).size / n;
  let peerBytes: number | undefined;
  if (ch) {
    // Merged into one part, as compact as ClickHouse gets it; only active parts count (replaced
    // ones wait minutes to be deleted).
    await ch.client.command({ query: "OPTIMIZE TABLE requests FINAL" });
    const [parts] = await chRows<{ bytes: string }>(ch.client,
      "SELECT sum(bytes_on_disk) AS bytes FROM system.parts WHERE active AND database = 'default' AND table = 'requests'");
    peerBytes = Number(parts!.bytes) / n;
    await ch.stop();
  }
  figures.push({ label: "Disk per request (records + app lines)", ours: oursBytes, peer: peerBytes, unit: "B", goal: "(lower is better)" });

  printTable(figures, peerName);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

/**
 * What the benches that compare reqlog with a peer database share: timed
 * runs, writing the same records to several targets in turn, the rows raw
 * ClickHouse stores for a record, reqlog servers in child processes, and a
 * table of figures with each side's ratio to the first.
 */
import { Readable } from "node:stream";
import { create, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import type { ClickHouseClient } from "@clickhouse/client";
import Database from "better-sqlite3";
import {
  type LogReadRequest,
  type LogReadRequestSchema,
  type LogReadResponse,
  type RequestLog,
  RequestLogSchema,
  WriteRequestSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { createLogServiceClient, type LogServiceClient } from "../../src/client/log-service-client.js";
import { formatCombined } from "../../src/format/combined-line.js";
import { benchDbPath, median, trafficRecords } from "../load.js";
import { type ChildServer, startChildServer } from "./child-server.js";
import { createEncodedWriter } from "./encoded-writer.js";

/** The median of `runs` timed calls (ms), after one untimed warm-up call. */
export async function timedRuns(runs: number, f: () => Promise<unknown>): Promise<number> {
  await f();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await f();
    times.push(performance.now() - t);
  }
  return median(times);
}

/**
 * The position `rows` rows into a keyset-paged order, reached in steps of at
 * most 1,000 rows: a deep page's position is the same however the rows before
 * it were fetched, and big steps make page 1000 of a 10M store reachable in
 * minutes where 999 pages of 100 take an hour on a slow side. `step(count,
 * after)` reads `count` rows after `after` and returns the position after
 * them (it must return exactly that many: a page cut short would misplace it).
 */
export async function walkTo<K>(rows: number, step: (count: number, after: K | undefined) => Promise<K | undefined>): Promise<K | undefined> {
  let after: K | undefined;
  for (let done = 0; done < rows; ) {
    const count = Math.min(1000, rows - done);
    after = await step(count, after);
    if (after === undefined) throw new Error(`the order ran out before ${rows.toLocaleString()} rows (at ${done.toLocaleString()})`);
    done += count;
  }
  return after;
}

/** A Read's fields as a plain object. */
type ReadInit = Omit<Exclude<MessageInitShape<typeof LogReadRequestSchema>, LogReadRequest>, "$typeName">;

/** reqlog's offset `rows` rows into the Read `init` names (walkTo's steps, each checked to be whole). */
export async function reqlogOffsetAt(read: (init: ReadInit) => Promise<LogReadResponse>, init: ReadInit, rows: number): Promise<Uint8Array> {
  const offset = await walkTo<Uint8Array>(rows, async (count, after) => {
    const page = await read({ ...init, count: BigInt(count), ...(after ? { offset: { requestId: after } } : {}) });
    if (page.log.length !== count) throw new Error(`reqlog returned ${page.log.length} of ${count} rows while paging`);
    return page.offset?.requestId;
  });
  return offset!;
}

/** Calls each side's runs in turn, `rounds` times (timings drift over minutes here): each side's median. */
export async function alternating(rounds: number, runsPerRound: number, sides: (() => Promise<unknown>)[]): Promise<number[]> {
  const times: number[][] = sides.map(() => []);
  for (const side of sides) await side(); // warm
  for (let round = 0; round < rounds; round++) {
    for (const [i, side] of sides.entries()) {
      for (let r = 0; r < runsPerRound; r++) {
        const t = performance.now();
        await side();
        times[i]!.push(performance.now() - t);
      }
    }
  }
  return times.map(median);
}

const sortTime = (log: RequestLog) => (log.finished ? log.endTime : log.startTime);

/** The row raw ClickHouse stores for a record: its fields, the combined line, its serialized size and lines as a Nested column. */
export function clickhouseRow(log: RequestLog) {
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

/** The raw table: every field, time-ordered per app (the 132 B/request reference). */
export const clickhouseTable = (name: string) => `
  CREATE TABLE ${name} (
    app_id String, module_id String, version_id String, request_id String, ip String, nickname String,
    start_time UInt64, end_time UInt64, sort_time UInt64, latency UInt64, mcycles UInt64,
    method String, resource String, http_version String, status Int32, response_size UInt64,
    referrer String, user_agent String, combined String, host String, replica_index Int32, finished UInt8,
    bytes UInt32,
    line Nested(time UInt64, level Int32, message String)
  ) ENGINE = MergeTree ORDER BY (app_id, sort_time, request_id)`;

/** The raw table's record columns (what a page returns). */
export const recordColumns =
  "app_id, module_id, version_id, request_id, ip, nickname, start_time, end_time, latency, mcycles, method, resource, " +
  "http_version, status, response_size, referrer, user_agent, combined, host, replica_index, finished";

export async function chRows<T>(ch: ClickHouseClient, query: string): Promise<T[]> {
  return (await (await ch.query({ query, format: "JSONEachRow" })).json()) as T[];
}

/** A ClickHouse string literal. */
export const chString = (s: string) => `'${s.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;

export interface WriteTarget<T> {
  /** What the client sends, built ahead (not timed). */
  prepare(batch: RequestLog[]): T;
  write(prepared: T): Promise<void>;
  /** Lets go of the target's connection (after writeEach). */
  close?(): void;
  /** CPU time (µs) the side's server has used so far, when the bench can see it: its CPU per record. */
  cpuMicros?(): number;
}

/** A side's write rate, and its server's CPU time per record stored (µs) when the bench can see it. */
export interface WriteFigures {
  rate: number;
  cpuPerRecord: number | undefined;
}

/**
 * Sends `total` records in batches of `batchSize`, `concurrency` calls in
 * flight, to each target in turn, 100,000 records at a time, the side that
 * goes first alternating: all meet the machine in the same state (this VM's
 * disk, page cache and neighbours drift over minutes). Each side's request
 * bodies are built before the clock starts (reqlog's protobuf, ClickHouse's
 * JSONEachRow), so what is timed is each server receiving, storing and
 * answering. `onChunk` sees each chunk's records (untimed). The targets are
 * closed after. Returns each target's records/s.
 */
export async function writeEach(...args: Parameters<typeof writeEachMeasured>): Promise<number[]> {
  return (await writeEachMeasured(...args)).map((f) => f.rate);
}

/** writeEach's runs, with each side's server CPU per record (its CPU during its own turns ÷ records). */
export async function writeEachMeasured(
  targets: WriteTarget<unknown>[],
  total: number,
  batchSize: number,
  concurrency: number,
  seed: number,
  onChunk?: (records: RequestLog[]) => Promise<void>,
): Promise<WriteFigures[]> {
  const chunk = 100_000;
  const records = trafficRecords(total, seed);
  const sendingMs = targets.map(() => 0);
  const cpu = targets.map(() => 0);
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
      const cpuBefore = target.cpuMicros?.() ?? 0;
      const started = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < prepared.length) await target.write(prepared[next++]!);
        }),
      );
      sendingMs[t]! += performance.now() - started;
      cpu[t]! += (target.cpuMicros?.() ?? 0) - cpuBefore;
    }
    await onChunk?.(chunkRecords);
    process.stdout.write(`  ${(done + chunkRecords.length).toLocaleString()}\r`);
  }
  for (const target of targets) target.close?.();
  return sendingMs.map((ms, t) => ({ rate: total / (ms / 1000), cpuPerRecord: targets[t]!.cpuMicros ? cpu[t]! / total : undefined }));
}

/** Merges every table of these databases into as few parts as it goes (`OPTIMIZE … FINAL`), as a settled store is. */
export async function clickhouseMerged(ch: ClickHouseClient, databases: readonly string[]): Promise<void> {
  const tables = await chRows<{ database: string; table: string }>(ch,
    `SELECT DISTINCT database, table FROM system.parts WHERE active AND database IN (${databases.map(chString).join(", ")})`);
  for (const t of tables) await ch.command({ query: `OPTIMIZE TABLE ${t.database}.${t.table} FINAL` });
}

/** Waits until ClickHouse has no merge running (at most 5 minutes), so its background work does not weigh on what is timed next. */
export async function clickhouseSettled(ch: ClickHouseClient): Promise<void> {
  const deadline = Date.now() + 300_000;
  while (Date.now() < deadline) {
    const [row] = await chRows<{ n: string }>(ch, "SELECT count() AS n FROM system.merges");
    if (Number(row!.n) === 0) return;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/**
 * reqlog's Write RPC with request bodies encoded ahead (encoded-writer.ts); it checks that every record was
 * stored. `server` (a child process) lets the bench see the server's CPU time.
 */
export function reqlogTarget(address: string, server?: Pick<ChildServer, "cpuMicros">): WriteTarget<{ encoded: Uint8Array; records: number }> {
  const writer = createEncodedWriter(address);
  return {
    ...(server ? { cpuMicros: () => server.cpuMicros() } : {}),
    prepare: (batch) => ({ encoded: writer.encode(create(WriteRequestSchema, { log: batch })), records: batch.length }),
    async write({ encoded, records }) {
      const reply = await writer.write(encoded);
      if (reply.records !== records) throw new Error(`reqlog stored ${reply.records} of ${records} records`);
    },
    close: writer.close,
  };
}

/** Columns of the raw SQLite table: the raw ClickHouse row's, lines as JSON text. */
const rawSqliteColumns = [
  "app_id", "module_id", "version_id", "request_id", "ip", "nickname", "start_time", "end_time", "sort_time", "latency",
  "mcycles", "method", "resource", "http_version", "status", "response_size", "referrer", "user_agent", "combined", "host",
  "replica_index", "finished", "bytes", "lines",
] as const;

/**
 * Raw better-sqlite3 inserts of the same records, in this process: the raw
 * ClickHouse table's row of each record (its fields, the combined line, its
 * serialized size, its lines as JSON text) into a table with reqlog's two
 * indexes on `requests` (unique (app, request id) for the upsert, (app, sort
 * time) for paging), WAL, the same `synchronous` as reqlog's server in the
 * bench and its page cache, one transaction a call. The rows' values are
 * built ahead; what is timed is SQLite storing them: the floor for a store of
 * request rows in SQLite.
 */
export function rawSqliteTarget(path: string, sync: "normal" | "full"): WriteTarget<unknown[][]> & { db: Database.Database } {
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma(`synchronous = ${sync.toUpperCase()}`);
  db.pragma("cache_size = -65536");
  db.exec(`
    CREATE TABLE requests (id INTEGER PRIMARY KEY, ${rawSqliteColumns.join(", ")});
    CREATE UNIQUE INDEX requests_by_request_id ON requests (app_id, request_id);
    CREATE INDEX requests_by_time ON requests (app_id, sort_time)`);
  const insert = db.prepare(`INSERT INTO requests (${rawSqliteColumns.join(", ")}) VALUES (${rawSqliteColumns.map(() => "?").join(", ")})`);
  const insertAll = db.transaction((rows: unknown[][]) => {
    for (const row of rows) insert.run(row);
  });
  return {
    db,
    prepare: (batch) =>
      batch.map((log) => {
        const row = clickhouseRow(log);
        const lines = JSON.stringify(log.line.map((l) => ({ time: Number(l.time), level: l.level, message: l.logMessage })));
        return rawSqliteColumns.map((c) =>
          c === "lines" ? lines : c === "request_id" ? Buffer.from(log.requestId) : (row[c as keyof typeof row] as unknown));
      }),
    write: async (rows) => insertAll(rows),
    cpuMicros: () => {
      const { user, system } = process.cpuUsage();
      return user + system;
    },
    close: () => db.close(),
  };
}

/** ClickHouse's rows as the JSONEachRow body of an INSERT, built ahead like reqlog's request bodies. */
export function clickhouseTarget(ch: ClickHouseClient, table: string): WriteTarget<string> {
  return {
    prepare: (batch) => batch.map((log) => JSON.stringify(clickhouseRow(log))).join("\n"),
    async write(body) {
      const result = await ch.exec({ query: `INSERT INTO ${table} FORMAT JSONEachRow`, values: Readable.from([body]) });
      result.stream.resume();
      await new Promise((resolve) => result.stream.once("end", resolve));
    },
  };
}

/** `reqlog serve` in a child process with a client of it; `dbPath` is its SQLite file (on the SQLite store). */
export type ReqlogChild = ChildServer & { dbPath: string; client: LogServiceClient };

/**
 * `reqlog serve` in a child process, on a fresh SQLite file, or on the
 * store `storeFlags` name; scans unbounded (a bench's regex visits every row).
 * `script` runs another build of reqlog, `nodeFlags` go to node (child-server.ts).
 */
export async function serveReqlog(name: string, storeFlags: string[] = [], script?: string, nodeFlags: string[] = []): Promise<ReqlogChild> {
  const dbPath = benchDbPath(name);
  const server = await startChildServer(
    [
      "--db", dbPath, "--listen", "127.0.0.1:0", "--log-level", "info", "--sync", "normal",
      "--read-scan-rows", "100000000", "--read-scan-ms", "600000", ...storeFlags,
    ],
    {},
    script,
    nodeFlags,
  );
  // benchDbPath's folder goes when the bench ends (it may read the file after stopReqlog).
  process.once("exit", () => server.process.kill("SIGKILL"));
  return { ...server, dbPath, client: createLogServiceClient({ server: server.address }) };
}

/** Closes the client, then stops `reqlog serve` gracefully. */
export async function stopReqlog(server: ReqlogChild): Promise<void> {
  server.client.close();
  await server.stop();
}

export interface Figure {
  label: string;
  /** One value per side, in the order of the table's columns. */
  values: (number | undefined)[];
  unit: string;
  goal?: string;
  /** Whether the goal is met, when the figures decide it. */
  met?: boolean;
}

/** A markdown table: each side's value, and the first side's ratio to each other side. */
export function printTable(figures: Figure[], sides: string[]): void {
  const fmt = (x: number | undefined, unit: string) =>
    x === undefined ? "—" : `${x >= 100 ? Math.round(x).toLocaleString() : x.toFixed(2)}${unit ? ` ${unit}` : ""}`;
  const ratios = sides.slice(1).map((s) => `${sides[0]} / ${s}`);
  console.log(`\n| measure | ${sides.join(" | ")} | ${ratios.join(" | ")} | goal | met |`);
  console.log(`|---|${sides.map(() => "---:").join("|")}|${ratios.map(() => "---:").join("|")}|---|---|`);
  for (const f of figures) {
    const [ours, ...peers] = f.values;
    const r = peers.map((p) => (ours === undefined || p === undefined ? "—" : `${(ours / p).toFixed(2)}×`));
    const met = f.met === undefined ? "" : f.met ? "yes" : "no";
    console.log(`| ${f.label} | ${f.values.map((v) => fmt(v, f.unit)).join(" | ")} | ${r.join(" | ")} | ${f.goal ?? ""} | ${met} |`);
  }
}

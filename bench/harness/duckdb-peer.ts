import { execFileSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { toBinary } from "@bufbuild/protobuf";
import { packageRoot } from "../../src/package-root.js";
import { type RequestLog, RequestLogSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { formatCombined } from "../../src/format/combined-line.js";

/**
 * DuckDB as a peer in the benchmarks: the same records in one table (the
 * combined line kept as a column, lines as lists), in a database file of its
 * own, queried in the bench's process with the same questions as reqlog and
 * ClickHouse. `regexp_matches` is RE2, with RE2's partial-match meaning.
 */
export interface DuckDbPeer {
  readonly version: string;
  /** Appends records (one appender flush per `batchSize`); returns records/s. */
  load(records: Iterable<RequestLog>, batchSize: number): Promise<number>;
  rows<T>(sql: string, values?: Record<string, string | number | bigint>): Promise<T[]>;
  /** The database file's bytes after a checkpoint. */
  diskBytes(): Promise<number>;
  close(): void;
}

/**
 * The DuckDB client this peer is measured with. It is not a dependency of
 * reqlog: the registry here lacks its other platforms' binding packages, so a
 * lock file naming it cannot be installed with `npm ci`. The bench installs
 * it on first use into bench/out/duckdb (as the benches install ClickHouse).
 */
export const duckDbClientVersion = "1.5.6-r.1";
const clientFolder = join(packageRoot(), "bench", "out", "duckdb");

/** The parts of @duckdb/node-api the peer uses. */
interface DuckDbApi {
  DuckDBInstance: { create(path: string): Promise<{ connect(): Promise<DuckDBConnection>; closeSync(): void }> };
  BIGINT: unknown;
  INTEGER: unknown;
  VARCHAR: unknown;
  LIST(item: unknown): unknown;
}
interface DuckDBConnection {
  run(sql: string): Promise<unknown>;
  runAndReadAll(sql: string, values?: Record<string, string | number | bigint>): Promise<{ getRows(): unknown[][]; getRowObjects(): unknown[] }>;
  createAppender(table: string): Promise<DuckDBAppender>;
  closeSync(): void;
}
interface DuckDBAppender {
  appendVarchar(value: string): void;
  appendBigInt(value: bigint): void;
  appendInteger(value: number): void;
  appendList(values: readonly unknown[], type: unknown): void;
  endRow(): void;
  flushSync(): void;
  closeSync(): void;
}

function loadDuckDb(): DuckDbApi {
  const manifest = join(clientFolder, "node_modules", "@duckdb", "node-api", "package.json");
  if (!existsSync(manifest)) {
    console.error(`installing @duckdb/node-api ${duckDbClientVersion} into ${clientFolder} (the DuckDB peer's client)`);
    execFileSync("npm", ["install", "--no-save", "--no-package-lock", "--no-audit", "--no-fund", "--prefix", clientFolder, `@duckdb/node-api@${duckDbClientVersion}`], {
      stdio: ["ignore", "inherit", "inherit"],
    });
  }
  return createRequire(manifest)("@duckdb/node-api") as DuckDbApi;
}

const table = `
  CREATE TABLE requests (
    app_id VARCHAR, module_id VARCHAR, version_id VARCHAR, request_id VARCHAR, ip VARCHAR, nickname VARCHAR,
    start_time BIGINT, end_time BIGINT, sort_time BIGINT, latency BIGINT, mcycles BIGINT, method VARCHAR, resource VARCHAR,
    http_version VARCHAR, status INTEGER, response_size BIGINT, referrer VARCHAR, user_agent VARCHAR, combined VARCHAR,
    host VARCHAR, replica_index INTEGER, finished INTEGER, bytes INTEGER,
    line_time BIGINT[], line_level INTEGER[], line_message VARCHAR[])`;

export async function openDuckDbPeer(folder: string): Promise<DuckDbPeer> {
  const { DuckDBInstance, BIGINT, INTEGER, LIST, VARCHAR } = loadDuckDb();
  const path = join(folder, "peer.duckdb");
  const instance = await DuckDBInstance.create(path);
  const connection: DuckDBConnection = await instance.connect();
  await connection.run(table);
  const version = String((await connection.runAndReadAll("SELECT version()")).getRows()[0]![0]);

  return {
    version,
    async load(records, batchSize) {
      // Rows are built 100,000 at a time before their appends are timed.
      const appender = await connection.createAppender("requests");
      let count = 0;
      let ms = 0;
      let chunk: RequestLog[] = [];
      const append = () => {
        const rows = chunk.map((log) => ({ log, combined: log.combined || formatCombined(log), bytes: toBinary(RequestLogSchema, log).length }));
        const started = performance.now();
        for (const { log, combined, bytes } of rows) {
          appender.appendVarchar(log.appId);
          appender.appendVarchar(log.moduleId);
          appender.appendVarchar(log.versionId);
          appender.appendVarchar(Buffer.from(log.requestId).toString("latin1"));
          appender.appendVarchar(log.ip);
          appender.appendVarchar(log.nickname);
          appender.appendBigInt(log.startTime);
          appender.appendBigInt(log.endTime);
          appender.appendBigInt(log.finished ? log.endTime : log.startTime);
          appender.appendBigInt(log.latency);
          appender.appendBigInt(log.mcycles);
          appender.appendVarchar(log.method);
          appender.appendVarchar(log.resource);
          appender.appendVarchar(log.httpVersion);
          appender.appendInteger(log.status);
          appender.appendBigInt(log.responseSize);
          appender.appendVarchar(log.referrer);
          appender.appendVarchar(log.userAgent);
          appender.appendVarchar(combined);
          appender.appendVarchar(log.host);
          appender.appendInteger(log.replicaIndex);
          appender.appendInteger(log.finished ? 1 : 0);
          appender.appendInteger(bytes);
          appender.appendList(log.line.map((l) => l.time), LIST(BIGINT));
          appender.appendList(log.line.map((l) => l.level), LIST(INTEGER));
          appender.appendList(log.line.map((l) => l.logMessage), LIST(VARCHAR));
          appender.endRow();
          if (++count % batchSize === 0) appender.flushSync();
        }
        ms += performance.now() - started;
        chunk = [];
      };
      for (const log of records) {
        chunk.push(log);
        if (chunk.length === 100_000) append();
      }
      append();
      const started = performance.now();
      appender.closeSync();
      ms += performance.now() - started;
      return count / (ms / 1000);
    },
    async rows<T>(sql: string, values?: Record<string, string | number | bigint>) {
      const reader = await connection.runAndReadAll(sql, values);
      return reader.getRowObjects() as T[];
    },
    async diskBytes() {
      await connection.run("CHECKPOINT");
      return statSync(path).size + (statSync(`${path}.wal`, { throwIfNoEntry: false })?.size ?? 0);
    },
    close() {
      connection.closeSync();
      instance.closeSync();
    },
  };
}

/**
 * A ClickHouse server of a test's (or a bench's) own: Debian's
 * clickhouse-server, installed with apt-get when it is missing (saying so),
 * started as a plain process on loopback with a config and data folder in a
 * temporary directory. Tests and benches share it; neither skips when
 * ClickHouse is missing: it is installed, or the start fails with the reason.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ClickHouseClient, ClickHouseLogLevel, createClient } from "@clickhouse/client";
import { migrate } from "../../src/store/clickhouse/migrate.js";
import { createSqlClient } from "../../src/store/clickhouse/sql-client.js";
import { createTableLayout } from "../../src/store/clickhouse/table-layout.js";
import { freePort, startLocalProcess, startOnFreePorts, withDebianPackage } from "./local-process.js";

export interface ClickHouseServer {
  /** Its HTTP interface, e.g. http://127.0.0.1:41234. */
  url: string;
  /** Its native TCP port (what `remote_servers` names). */
  tcpPort: number;
  /** A client of it (database `default`). */
  client: ClickHouseClient;
  version: string;
  /** Its data folder (everything it stores is under it). */
  dataPath: string;
  /** Stops the server (SIGTERM, then waits for it) and, unless `keep` was asked, removes its folder. */
  stop(): Promise<void>;
}

export interface ClickHouseServerOptions {
  /** Prefix of its temporary folder (default "reqlog-clickhouse-"). */
  name?: string;
  /** More server configuration, inside <yandex> (e.g. remote_servers, zookeeper, macros). */
  extraConfig?: string;
  /** Keep the folder after stop (a bench that reports its disk use). */
  keep?: boolean;
  /** How long to wait for the server to answer (default 60 s). */
  startTimeoutMs?: number;
  /** Its ports, when a cluster's configs must name them before the servers start (default: free ports). */
  ports?: ClickHousePorts;
  /**
   * Seconds before parts a merge or mutation replaced leave the disk (default 30; ClickHouse's own is 480),
   * also how often the cleanup looks for them when given: a test that checks erased bytes leave the folder.
   */
  oldPartsLifetime?: number;
  /** Log every query in `system.query_log` (flushed every second): what a test reads of each statement. */
  logQueries?: boolean;
}

export interface ClickHousePorts {
  http: number;
  tcp: number;
  interserver: number;
}

/** Three free ports on loopback for a server. */
export async function freeClickHousePorts(): Promise<ClickHousePorts> {
  return { http: await freePort(), tcp: await freePort(), interserver: await freePort() };
}

const binaries = ["/usr/sbin/clickhouse-server", "/usr/bin/clickhouse-server", "/usr/bin/clickhouse"];

function findBinary(): string[] | undefined {
  for (const path of binaries) {
    if (!existsSync(path)) continue;
    return path.endsWith("/clickhouse") ? [path, "server"] : [path];
  }
  return undefined;
}

/** The server binary, installing Debian's clickhouse-server when it is missing (apt-get update first). */
function clickhouseBinary(): string[] {
  return withDebianPackage("clickhouse-server", findBinary);
}

/** How soon replaced parts go: 30 s by default, or `seconds` with the cleanup looking as often. */
const mergeTreeConfig = (seconds?: number) =>
  seconds === undefined
    ? "<old_parts_lifetime>30</old_parts_lifetime>"
    : `<old_parts_lifetime>${seconds}</old_parts_lifetime><cleanup_delay_period>${seconds}</cleanup_delay_period>`;

/** Starts a ClickHouse server of its own on loopback; throws (with its output) when it cannot. */
export async function startClickHouse(options: ClickHouseServerOptions = {}): Promise<ClickHouseServer> {
  if (options.ports) return startOnce(options);
  // Ports of its own choosing: another listener may take one between the pick and the bind.
  return startOnFreePorts("ClickHouse", () => startOnce(options));
}

async function startOnce(options: ClickHouseServerOptions): Promise<ClickHouseServer> {
  const binary = clickhouseBinary();
  // On the disk, not /dev/shm: a test server's many tiny parts took 1.4 GB each
  // and filled the CI machine's shared memory while several servers ran.
  const dir = mkdtempSync(join(tmpdir(), options.name ?? "reqlog-clickhouse-"));
  const { http: httpPort, tcp: tcpPort, interserver: interserverPort } = options.ports ?? (await freeClickHousePorts());
  // The smallest config 18.16 serves with: loopback only, its own ports and
  // folders, one passwordless user reachable from 127.0.0.1.
  writeFileSync(
    join(dir, "config.xml"),
    `<yandex>
  <logger><level>warning</level><console>1</console></logger>
  <http_port>${httpPort}</http_port>
  <tcp_port>${tcpPort}</tcp_port>
  <interserver_http_port>${interserverPort}</interserver_http_port>
  <interserver_http_host>127.0.0.1</interserver_http_host>
  <listen_host>127.0.0.1</listen_host>
  <path>${dir}/data/</path>
  <tmp_path>${dir}/tmp/</tmp_path>
  <user_files_path>${dir}/user_files/</user_files_path>
  <format_schema_path>${dir}/format_schemas/</format_schema_path>
  <users_config>users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>536870912</mark_cache_size>
  <merge_tree>${mergeTreeConfig(options.oldPartsLifetime)}</merge_tree>
  ${options.logQueries ? "<query_log><database>system</database><table>query_log</table><flush_interval_milliseconds>1000</flush_interval_milliseconds></query_log>" : ""}
  ${options.extraConfig ?? ""}
</yandex>
`,
  );
  writeFileSync(
    join(dir, "users.xml"),
    `<yandex>
  <profiles><default>${options.logQueries ? "<log_queries>1</log_queries>" : ""}</default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
`,
  );
  const [command, ...args] = binary;
  // A run that fails must not leave its server running: it is killed when this process exits.
  const server = startLocalProcess(command!, [...args, `--config-file=${join(dir, "config.xml")}`], dir);

  const url = `http://127.0.0.1:${httpPort}`;
  const client = createClient({ url, log: { level: ClickHouseLogLevel.OFF }, request_timeout: 600_000 });
  /** Stops the server with `signal` (if it still runs) and removes its folder unless kept. */
  const shutdown = async (signal: NodeJS.Signals) => {
    await client.close();
    await server.stop(signal);
    if (!options.keep) rmSync(dir, { recursive: true, force: true });
  };
  const fail = async (why: string): Promise<never> => {
    await shutdown("SIGKILL");
    throw new Error(`clickhouse-server ${why}\n${server.stderr()}`);
  };
  const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
  for (;;) {
    if (server.exited()) return fail(`exited at start (${command})`);
    if ((await client.ping()).success) break;
    if (Date.now() > deadline) return fail(`did not answer on ${url} within ${options.startTimeoutMs ?? 60_000} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const result = await client.query({ query: "SELECT version() AS v", format: "JSONEachRow" });
  const version = ((await result.json()) as { v: string }[])[0]!.v;
  return {
    url,
    tcpPort,
    client,
    version,
    dataPath: join(dir, "data"),
    stop: () => shutdown("SIGTERM"),
  };
}

/**
 * The rows a statement returns (JSONEachRow), none for an INSERT. With
 * `database`, it runs there: its unqualified table names (requestsRead's
 * `requests`) are that database's.
 */
export async function queryRows<T>(server: ClickHouseServer, sql: string, database?: string): Promise<T[]> {
  const client = database === undefined ? server.client : createClient({ url: server.url, database, log: { level: ClickHouseLogLevel.OFF } });
  try {
    if (sql.startsWith("INSERT")) return (await client.command({ query: sql }), []);
    return (await (await client.query({ query: sql, format: "JSONEachRow" })).json()) as T[];
  } finally {
    if (client !== server.client) await client.close();
  }
}

/**
 * A database as an older build left it: `name` made by the migrations up to
 * `version` only, then the rows of `tables` copied from `source` (written by
 * today's backend; the tables whose columns the later migrations keep).
 */
export async function olderDatabase(server: ClickHouseServer, name: string, version: number, source: string, tables: readonly string[]): Promise<void> {
  await server.client.command({ query: `CREATE DATABASE ${name}` });
  const client = createClient({ url: server.url, database: name, log: { level: ClickHouseLogLevel.OFF } });
  await migrate(createSqlClient(client), createTableLayout(name), version);
  await client.close();
  for (const table of tables) await server.client.command({ query: `INSERT INTO ${name}.${table} SELECT * FROM ${source}.${table}` });
}

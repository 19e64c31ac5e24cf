/**
 * A ClickHouse server of a test's (or a bench's) own: Debian's
 * clickhouse-server, installed with apt-get when it is missing (saying so),
 * started as a plain process on loopback with a config and data folder in a
 * temporary directory. Tests and benches share it; neither skips when
 * ClickHouse is missing: it is installed, or the start fails with the reason.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, statfsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ClickHouseClient, ClickHouseLogLevel, createClient } from "@clickhouse/client";
import { freePort } from "./free-port.js";

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
  /**
   * Keep its data in memory (/dev/shm, where there is one with a GB free):
   * for tests, whose many tiny inserts each write a part of files per column.
   */
  inMemory?: boolean;
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
  const found = findBinary();
  if (found) return found;
  console.log("clickhouse-server is missing: installing Debian's clickhouse-server package (apt-get update, apt-get install) …");
  const install = spawnSync(
    "sh",
    ["-c", "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clickhouse-server"],
    { stdio: "inherit" },
  );
  const after = findBinary();
  if (install.status !== 0 || !after) {
    throw new Error(
      `cannot install clickhouse-server: apt-get exited with ${install.status ?? install.signal} (it needs root and a reachable Debian mirror)`,
    );
  }
  return after;
}

/** Whether /dev/shm exists with room for a test server's data (a container's default 64 MB is too small). */
function roomInMemory(): boolean {
  if (!existsSync("/dev/shm")) return false;
  const fs = statfsSync("/dev/shm");
  return fs.bavail * fs.bsize > 1024 ** 3;
}

/** Starts a ClickHouse server of its own on loopback; throws (with its output) when it cannot. */
export async function startClickHouse(options: ClickHouseServerOptions = {}): Promise<ClickHouseServer> {
  const binary = clickhouseBinary();
  const base = options.inMemory && roomInMemory() ? "/dev/shm" : tmpdir();
  const dir = mkdtempSync(join(base, options.name ?? "reqlog-clickhouse-"));
  const [httpPort, tcpPort, interserverPort] = [await freePort(), await freePort(), await freePort()];
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
  ${options.extraConfig ?? ""}
</yandex>
`,
  );
  writeFileSync(
    join(dir, "users.xml"),
    `<yandex>
  <profiles><default></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
`,
  );
  const [command, ...args] = binary;
  const child: ChildProcess = spawn(command!, [...args, `--config-file=${join(dir, "config.xml")}`], {
    cwd: dir,
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
  let exited = false;
  const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  void gone.then(() => (exited = true));
  // A run that fails must not leave its server running.
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);

  const url = `http://127.0.0.1:${httpPort}`;
  const client = createClient({ url, log: { level: ClickHouseLogLevel.OFF }, request_timeout: 600_000 });
  /** Stops the server with `signal` (if it still runs) and removes its folder unless kept. */
  const shutdown = async (signal: NodeJS.Signals) => {
    await client.close();
    process.off("exit", killOnExit);
    if (!exited) {
      child.kill(signal);
      await gone;
    }
    if (!options.keep) rmSync(dir, { recursive: true, force: true });
  };
  const fail = async (why: string): Promise<never> => {
    await shutdown("SIGKILL");
    throw new Error(`clickhouse-server ${why}\n${stderr}`);
  };
  const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
  for (;;) {
    if (exited) return fail(`exited at start (${command})`);
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

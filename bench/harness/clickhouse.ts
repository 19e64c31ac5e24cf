/**
 * A ClickHouse server of the bench's own: Debian's clickhouse-server (installed
 * from apt when missing), started on loopback with a config and data folder in
 * a temporary directory, reached through @clickhouse/client.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ClickHouseClient, ClickHouseLogLevel, createClient } from "@clickhouse/client";

export interface ClickHouse {
  client: ClickHouseClient;
  version: string;
  /** Its data folder (everything it stores is under it). */
  dataPath: string;
  stop(): Promise<void>;
}

const binaries = ["/usr/sbin/clickhouse-server", "/usr/bin/clickhouse-server", "/usr/bin/clickhouse"];

function findBinary(): string[] | undefined {
  for (const path of binaries) {
    if (!existsSync(path)) continue;
    return path.endsWith("/clickhouse") ? [path, "server"] : [path];
  }
  return undefined;
}

/** The server binary, installing Debian's clickhouse-server when it is missing; undefined (with the reason printed) when it cannot be had. */
function clickhouseBinary(): string[] | undefined {
  const found = findBinary();
  if (found) return found;
  console.log("clickhouse-server is missing: installing Debian's clickhouse-server package (apt-get) …");
  const install = spawnSync("sh", ["-c", "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clickhouse-server"], {
    stdio: "inherit",
  });
  const after = findBinary();
  if (install.status !== 0 || !after) {
    console.log("clickhouse-server could not be installed (apt-get failed, or no root): the ClickHouse comparisons are skipped");
    return undefined;
  }
  return after;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Starts a ClickHouse server of its own; undefined when none can be had (the reason is printed). */
export async function startClickHouse(): Promise<ClickHouse | undefined> {
  const binary = clickhouseBinary();
  if (!binary) return undefined;
  const dir = mkdtempSync(join(tmpdir(), "reqlog-bench-clickhouse-"));
  const [httpPort, tcpPort] = [await freePort(), await freePort()];
  // The smallest config 18.16 serves with: loopback only, its own ports and
  // folders, one passwordless user reachable from 127.0.0.1.
  writeFileSync(
    join(dir, "config.xml"),
    `<yandex>
  <logger><level>warning</level><console>1</console></logger>
  <http_port>${httpPort}</http_port>
  <tcp_port>${tcpPort}</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>${dir}/data/</path>
  <tmp_path>${dir}/tmp/</tmp_path>
  <user_files_path>${dir}/user_files/</user_files_path>
  <format_schema_path>${dir}/format_schemas/</format_schema_path>
  <users_config>users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>536870912</mark_cache_size>
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
  child.once("exit", () => (exited = true));
  // A bench that fails must not leave its server running.
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);

  const client = createClient({
    url: `http://127.0.0.1:${httpPort}`,
    log: { level: ClickHouseLogLevel.OFF },
    request_timeout: 600_000,
  });
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (exited) {
      console.log(`clickhouse-server exited at start: the ClickHouse comparisons are skipped\n${stderr}`);
      return undefined;
    }
    if ((await client.ping()).success) break;
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      console.log(`clickhouse-server did not answer within 30 s: the ClickHouse comparisons are skipped\n${stderr}`);
      return undefined;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const version = ((await (await client.query({ query: "SELECT version() AS v", format: "JSONEachRow" })).json()) as { v: string }[])[0]!.v;
  return {
    client,
    version,
    dataPath: join(dir, "data"),
    async stop() {
      await client.close();
      process.off("exit", killOnExit);
      if (exited) return;
      const gone = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await gone;
    },
  };
}

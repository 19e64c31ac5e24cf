/**
 * A ClickHouse cluster of a test's (or a bench's) own: a ZooKeeper and two
 * clickhouse-server processes on loopback (test/helpers/zookeeper.ts,
 * clickhouse-server.ts), each with its own config and data folder, whose
 * `remote_servers` name both as the two shards (one replica each) of the
 * cluster `reqlog_test`, with what ON CLUSTER DDL needs (zookeeper,
 * distributed_ddl, macros).
 */
import { type ClickHouseServer, freeClickHousePorts, startClickHouse } from "./clickhouse-server.js";
import { freePort, startOnFreePorts } from "./local-process.js";
import { startZooKeeper, type ZooKeeper } from "./zookeeper.js";

export interface ClickHouseCluster {
  name: string;
  /** The servers, one per shard; reqlog talks to the first. */
  servers: ClickHouseServer[];
  stop(): Promise<void>;
}

export interface ClickHouseClusterOptions {
  shards?: number;
  keep?: boolean;
}

/**
 * Starts the cluster; when a port its configs name was taken before its
 * server bound it, starts again on other ports (at most three times).
 */
export function startClickHouseCluster(options: ClickHouseClusterOptions = {}): Promise<ClickHouseCluster> {
  return startOnFreePorts("ClickHouse cluster", () => startClusterOnce(options));
}

async function startClusterOnce(options: ClickHouseClusterOptions): Promise<ClickHouseCluster> {
  const name = "reqlog_test";
  const shards = options.shards ?? 2;
  const ports = await Promise.all(Array.from({ length: shards }, () => freeClickHousePorts()));
  const zookeeperPort = await freePort();
  const zookeeper: ZooKeeper = await startZooKeeper(zookeeperPort);
  const servers: ClickHouseServer[] = [];
  const stop = async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await zookeeper.stop();
  };
  try {
    const remoteServers = ports
      .map((p) => `<shard><replica><host>127.0.0.1</host><port>${p.tcp}</port></replica></shard>`)
      .join("");
    for (const [i, p] of ports.entries()) {
      servers.push(
        await startClickHouse({
          name: `reqlog-cluster-shard${i + 1}-`,
          ports: p,
          keep: options.keep,
          extraConfig: `
  <remote_servers><${name}>${remoteServers}</${name}></remote_servers>
  <zookeeper><node><host>127.0.0.1</host><port>${zookeeperPort}</port></node></zookeeper>
  <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>
  <macros><shard>${i + 1}</shard><replica>r1</replica></macros>`,
        }),
      );
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { name, servers, stop };
}

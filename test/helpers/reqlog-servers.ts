import { type ChildServer, startChildServer } from "../../bench/harness/child-server.js";
import { createTestClient, type TestClient } from "./test-client.js";

/** Where the servers keep their requests: a ClickHouse URL, a database, and the cluster flags if any. */
export interface SharedClickHouse {
  url: string;
  database: string;
  /** ["--clickhouse-cluster", NAME] on a cluster. */
  clusterFlags?: string[];
}

export interface ReqlogServers {
  /** The servers now (a restarted one is replaced in place). */
  readonly servers: readonly ChildServer[];
  /** A client of server i (made again after a restart, on its new port). */
  client(i: number): TestClient;
  /** Ends server i at once (SIGKILL): no shutdown, calls in flight cut. */
  kill(i: number): Promise<void>;
  /** Starts server i again (after kill) on the same database. */
  restart(i: number): Promise<void>;
  /** Stops every server (SIGTERM) and closes the clients. */
  stop(): Promise<void>;
}

/**
 * Several real `reqlog serve --store clickhouse` processes (the built CLI,
 * as a user runs it) on one database: the servers of a scale-out set-up,
 * server i listening on `listen(i)` (default 127.0.0.1:0, a free port),
 * again after a restart. They are started at once, so the first start of
 * the database is raced as it would be in production.
 */
export async function startReqlogServers(
  count: number,
  target: SharedClickHouse,
  extraArgs: string[] = [],
  listen: (i: number) => string = () => "127.0.0.1:0",
): Promise<ReqlogServers> {
  const args = ["--store", "clickhouse", "--clickhouse-database", target.database, ...(target.clusterFlags ?? []), ...extraArgs];
  const env = { REQLOG_CLICKHOUSE_URL: target.url };
  const start = (i: number) => startChildServer(["--listen", listen(i), ...args], env);
  const servers = await Promise.all(Array.from({ length: count }, (_, i) => start(i)));
  const clients: (TestClient | undefined)[] = [];
  return {
    servers,
    client(i) {
      return (clients[i] ??= createTestClient({ server: servers[i]!.address }));
    },
    async kill(i) {
      clients[i]?.close();
      clients[i] = undefined;
      servers[i]!.process.kill("SIGKILL");
      await servers[i]!.exited;
    },
    async restart(i) {
      servers[i] = await start(i);
      clients[i]?.close();
      clients[i] = undefined; // (one made while it was down has its old port)
    },
    async stop() {
      for (const c of clients) c?.close();
      await Promise.all(servers.map((s) => (s.process.exitCode === null && s.process.signalCode === null ? s.stop() : s.exited)));
    },
  };
}

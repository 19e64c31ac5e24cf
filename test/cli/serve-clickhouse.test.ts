import { create, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { UserAppLogGroupSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { runCli, startChildServer } from "../../bench/harness/child-server.js";
import { startClickHouseCluster } from "../helpers/clickhouse-cluster.js";
import { startClickHouse } from "../helpers/clickhouse-server.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { Code } from "../../src/reqlog-error.js";
import { callError, createTestClient } from "../helpers/test-client.js";

// Starting the two-shard cluster (ZooKeeper and two servers; on a fresh machine, ZooKeeper installed first)
// takes more than the default 30 s of a hook on a loaded machine, as the cluster contract's does.
vi.setConfig({ hookTimeout: 600_000 });

/** A ClickHouse to serve on: its URL, the flags that name its cluster if any, and how to stop it. */
interface Target {
  url: string;
  clusterFlags: string[];
  stop(): Promise<void>;
}

const targets: [string, () => Promise<Target>][] = [
  [
    "one ClickHouse server",
    async () => {
      const server = await startClickHouse({ name: "reqlog-serve-clickhouse-" });
      return { url: server.url, clusterFlags: [], stop: () => server.stop() };
    },
  ],
  [
    "a cluster of two shards (--clickhouse-cluster)",
    async () => {
      const cluster = await startClickHouseCluster();
      return { url: cluster.servers[0]!.url, clusterFlags: ["--clickhouse-cluster", cluster.name], stop: () => cluster.stop() };
    },
  ],
];

const ids = (logs: { requestId: Uint8Array }[]) => logs.map((l) => new TextDecoder().decode(l.requestId));

describe.each(targets)("reqlog serve --store clickhouse on %s", (_, start) => {
  let clickhouse: Target;
  beforeAll(async () => {
    clickhouse = await start();
  });
  afterAll(async () => {
    await clickhouse?.stop();
  });

  it("answers the RPCs as on SQLite: Write, Flush, Read with paging and regex, Usage, Tail, SetStatus/ListStatus", async () => {
    const database = `reqlog_serve_${process.pid}`;
    const server = await startChildServer(
      ["--listen", "127.0.0.1:0", "--store", "clickhouse", "--clickhouse-database", database, ...clickhouse.clusterFlags],
      { REQLOG_CLICKHOUSE_URL: clickhouse.url },
    );
    const cluster = clickhouse.clusterFlags.length > 0 ? ` on cluster ${clickhouse.clusterFlags[1]}` : "";
    expect(server.stderr()).toContain(`"store":"clickhouse ${clickhouse.url}/${database}${cluster}"`);
    const client = createTestClient({ server: server.address });
    try {
      const written = await client.write({
        log: ["a", "b", "c"].map((id, i) =>
          minimalLog({ requestId: rid(id), endTime: t0 + BigInt(i + 1) * 1000n, status: i === 1 ? 503 : 200 }),
        ),
      });
      expect(written).toMatchObject({ records: 3, lines: 0 });
      const logs = toBinary(
        UserAppLogGroupSchema,
        create(UserAppLogGroupSchema, { logLine: [{ timestampUsec: t0 + 10n, level: 3n, message: "disk quota exceeded" }] }),
      );
      await client.flush({ logs }, { headers: { "reqlog-app-id": "forge", "reqlog-version-id": "v1", "reqlog-request-id": "a" } });

      const first = await client.read({ appId: "forge", count: 2n, includeAppLogs: true });
      expect(ids(first.log)).toEqual(["c", "b"]);
      const next = await client.read({ appId: "forge", count: 2n, includeAppLogs: true, offset: first.offset });
      expect(ids(next.log)).toEqual(["a"]);
      expect(next.log[0]!.line.map((l) => l.logMessage)).toEqual(["disk quota exceeded"]);
      expect(ids((await client.read({ appId: "forge", combinedLogRegex: '" 503 ' })).log)).toEqual(["b"]);
      expect((await client.usage({ appId: "forge" })).summary).toMatchObject({ count: 3n, records: 1 });

      // A Tail is in place once its response headers arrive: a write after that is delivered.
      const controller = new AbortController();
      let inPlace!: () => void;
      const subscribed = new Promise<void>((resolve) => (inPlace = resolve));
      const seen: string[] = [];
      const following = (async () => {
        try {
          for await (const page of client.tail({ appId: "forge" }, { signal: controller.signal, onHeader: () => inPlace() })) {
            seen.push(...ids(page.log));
            if (seen.includes("d")) controller.abort();
          }
        } catch (err) {
          if (!controller.signal.aborted) throw err;
        }
      })();
      await subscribed;
      await client.write({ log: [minimalLog({ requestId: rid("d"), endTime: t0 + 9000n })] });
      await following;
      expect(seen).toEqual(["d"]);

      await client.setStatus(
        { status: "serving" },
        { headers: { "reqlog-app-id": "forge", "reqlog-version-id": "v1", "reqlog-instance-id": "web-1" } },
      );
      const statuses = await client.listStatus({ appId: "forge" });
      expect(statuses.status.map((s) => [s.instanceId, s.status])).toEqual([["web-1", "serving"]]);
    } finally {
      client.close();
      expect(await server.stop()).toEqual({ code: 0, signal: null });
    }
  });

  it("manages tokens in the ClickHouse store: created, listed and asked for by a server on it", async () => {
    const store = [
      "--store", "clickhouse", "--clickhouse-url", clickhouse.url, "--clickhouse-database", `reqlog_tokens_${process.pid}`,
      ...clickhouse.clusterFlags,
    ];
    const created = await runCli(["token", "create", ...store, "--scope", "read:logs", "--app", "forge", "--name", "dash"]);
    expect(created.code).toBe(0);
    const token = created.stdout.trim();
    expect(token).toMatch(/^rql_[0-9a-f]{16}_/);
    const listed = await runCli(["token", "list", ...store]);
    expect(listed.stdout).toMatch(/^ {3}1 {2}active +read:logs +forge +\d{4}-\d\d-\d\dT[\d:]+Z +dash$/m);

    const server = await startChildServer(["--listen", "127.0.0.1:0", ...store]);
    expect(server.stderr()).toContain('"tokens":true');
    const anonymous = createTestClient({ server: server.address });
    const reader = createTestClient({ server: server.address, token });
    try {
      expect((await callError(anonymous.read({ appId: "forge" }))).code).toBe(Code.UNAUTHENTICATED);
      expect((await reader.read({ appId: "forge" })).log).toEqual([]);
      expect((await callError(reader.read({ appId: "other" }))).code).toBe(Code.PERMISSION_DENIED);
    } finally {
      anonymous.close();
      reader.close();
      expect(await server.stop()).toEqual({ code: 0, signal: null });
    }
    expect((await runCli(["token", "revoke", ...store, "1"])).stdout.trim()).toBe(
      "revoked token 1: it was the last active token.\n" +
        "A server listening on a non-loopback address now refuses every call until a token is created;\n" +
        "one listening on loopback only now serves anyone who can connect to it.",
    );
  });
});

describe("reqlog serve --store clickhouse, failing", () => {
  it("stops with a clear error when ClickHouse cannot be reached", async () => {
    const { code, stderr } = await runCli([
      "serve",
      "--listen",
      "127.0.0.1:0",
      "--http-listen",
      "off",
      "--store",
      "clickhouse",
      "--clickhouse-url",
      "http://127.0.0.1:1",
    ]);
    expect(code).not.toBe(0);
    expect(stderr).toMatch(/^reqlog: cannot open the ClickHouse store http:\/\/127\.0\.0\.1:1, database reqlog: /m);
  });
});

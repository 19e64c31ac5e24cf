import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { openClickHouseBackend } from "../../src/store/clickhouse/clickhouse-backend.js";
import { LogLineSchema, LogReadRequestSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { createOffsetCodec } from "../../src/query/offset-codec.js";
import { planRead } from "../../src/query/read-plan.js";
import { prepareRequestLog } from "../../src/write/prepare-request-log.js";
import { defaultLimits } from "../../src/limits.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { type ClickHouseCluster, startClickHouseCluster } from "../helpers/clickhouse-cluster.js";
import { isScan, queryCounter } from "../helpers/query-counter.js";
import { openAlternating } from "./alternating-backend.js";
import { clickhouseRuns, describeStoreContract, reopenable } from "./contract.js";

// Starting ClickHouse and ZooKeeper may first install them (apt-get): minutes on a fresh machine.
// The paging property (30 runs of distributed inserts and reads) takes minutes, over six at load 15
// beside other work: the timeout guards against a hang.
vi.setConfig({ hookTimeout: 600_000, testTimeout: 600_000 });

const database = `reqlog_cluster_${process.pid}`;
let cluster: ClickHouseCluster;
/** The tables holding rows on each shard (the `_local` ones), but the migrations' record. */
let localTables: string[] = [];

const rowsOf = async (server: number, query: string) => {
  const result = await cluster.servers[server]!.client.query({ query, format: "JSONEachRow" });
  return (await result.json()) as Record<string, string>[];
};

// A two-shard cluster (two servers and a ZooKeeper on loopback) for the file.
// The database is created and migrated ON CLUSTER once, by the first open;
// each test then starts from empty tables on both shards (TRUNCATE on each
// server: distributed DDL takes ~0.1 s a statement, 40 of them per database).
beforeAll(async () => {
  cluster = await startClickHouseCluster();
  const backend = await openClickHouseBackend({ url: cluster.servers[0]!.url, database, cluster: cluster.name });
  await backend.close();
  localTables = (
    await rowsOf(0, `SELECT name FROM system.tables WHERE database = '${database}' AND name LIKE '%\\_local' AND engine != 'Null'`)
  )
    .map((t) => t.name!)
    .filter((name) => name !== "schema_migrations_local");
});
afterAll(async () => {
  await cluster?.stop();
});

async function emptyShards(): Promise<void> {
  for (const server of cluster.servers) {
    for (const table of localTables) await server.client.command({ query: `TRUNCATE TABLE ${database}.${table}` });
  }
}

describe("a ClickHouse cluster of two shards", () => {
  it("has every table on both shards, with a Distributed table over each", async () => {
    for (const server of [0, 1]) {
      const tables = await rowsOf(server, `SELECT name, engine FROM system.tables WHERE database = '${database}' ORDER BY name`);
      const engines = new Map(tables.map((t) => [t.name!, t.engine!]));
      for (const name of ["requests", "positions", "lines", "moves", "usage_hourly", "stats_hourly", "stats_clients", "meta", "statuses", "tokens"]) {
        expect(engines.get(name), name).toBe("Distributed");
        expect(engines.get(`${name}_local`), `${name}_local`).toMatch(/MergeTree$/);
      }
      expect(engines.get("request_changes_local")).toBe("Null");
      expect(engines.get("request_changes_4_requests")).toBe("MaterializedView");
    }
  });

  it("spreads requests over both shards by (app, request id), each request's versions and lines on one", async () => {
    await emptyShards();
    const backend = await openClickHouseBackend({ url: cluster.servers[0]!.url, database, cluster: cluster.name });
    const signal = new AbortController().signal;
    try {
      const logs = (suffix: string) =>
        Array.from({ length: 40 }, (_, i) =>
          prepareRequestLog(
            minimalLog({ requestId: rid(`r${i}`), endTime: t0 + BigInt(i), line: [create(LogLineSchema, { time: t0 + (suffix === "one" ? 0n : 1n), level: 1, logMessage: `line ${suffix}` })] }),
            defaultLimits,
            "log",
          ),
        );
      await backend.store.write(logs("one"), signal);
      await backend.store.write(logs("two"), signal); // a second version of each, with one more line
      const perShard = await Promise.all(
        [0, 1].map(async (s) => (await rowsOf(s, `SELECT count() AS n, uniqExact(request_id) AS ids FROM ${database}.requests_local`))[0]!),
      );
      expect(perShard.every((s) => Number(s.ids) > 5)).toBe(true);
      expect(perShard.reduce((n, s) => n + Number(s.ids), 0)).toBe(40);
      for (const s of [0, 1]) {
        const stray = await rowsOf(
          s,
          `SELECT count() AS n FROM ${database}.lines_local WHERE request_id NOT IN (SELECT request_id FROM ${database}.requests_local)`,
        );
        expect(stray[0]!.n).toBe("0");
      }
      const stored = await backend.store.getRequests("forge", Array.from({ length: 40 }, (_, i) => rid(`r${i}`)), signal);
      expect(stored.map((r) => r.line.map((l) => l.logMessage))).toEqual(Array.from({ length: 40 }, () => ["line one", "line two"]));
    } finally {
      await backend.close();
    }
  });

  it("answers a regex Read through the search index as a scan does, page by page while writes go on", async () => {
    await emptyShards();
    const signal = new AbortController().signal;
    const scans = queryCounter(isScan);
    // (The pattern's two parts, the resource and the user agent: the candidates are the sort times under both.)
    const intersected = queryCounter((query) => query.includes("HAVING max(key IN"));
    const indexed = await openClickHouseBackend({
      url: cluster.servers[0]!.url, database, cluster: cluster.name, searchIndex: "always",
      interpose: (sql) => intersected.interpose(scans.interpose(sql)),
    });
    const scanned = await openClickHouseBackend({ url: cluster.servers[0]!.url, database, cluster: cluster.name, searchIndex: "never" });
    try {
      const log = (i: number, status: number) =>
        prepareRequestLog(
          minimalLog({
            requestId: rid(`r${i}`), endTime: t0 + BigInt(i), resource: i % 8 === 0 ? "/rare/needle.txt" : `/api/v1/items/${i}`, status,
            userAgent: i % 4 === 0 ? "probe/1" : "curl/8",
          }),
          defaultLimits,
          "log",
        );
      await indexed.store.write(Array.from({ length: 40 }, (_, i) => log(i, i % 16 === 0 ? 500 : 200)), signal);
      const pages = async (backend: typeof indexed) => {
        const offsets = createOffsetCodec(await backend.store.offsetKey(signal));
        const ids: string[] = [];
        let after: Uint8Array | undefined;
        let written = false;
        do {
          const request = create(LogReadRequestSchema, {
            appId: "forge", count: 1n, combinedLogRegex: '/rare/needle\\.txt" 500 .*"probe/1"',
            ...(after && { offset: { requestId: offsets.encode("forge", after) } }),
          });
          const page = await backend.store.read(planRead(request, defaultLimits, offsets), signal);
          ids.push(...page.records.map((r) => new TextDecoder().decode(r.log.requestId)));
          after = page.next;
          if (!written) {
            // A match written again after the first page: it stays where it stood at the snapshot.
            await backend.store.write([log(16, 500)], signal);
            written = true;
          }
        } while (after);
        return ids;
      };
      const fromIndex = await pages(indexed);
      expect(fromIndex).toEqual(["r32", "r16", "r0"]);
      expect(scans.seen).toBe(0);
      expect(intersected.seen).toBeGreaterThan(0);
      expect(await pages(scanned)).toEqual(fromIndex);
    } finally {
      await indexed.close();
      await scanned.close();
    }
  });
});

describeStoreContract("ClickHouse (two shards)", async (now, requestLines) => {
  await emptyShards();
  return reopenable(() => openClickHouseBackend({ url: cluster.servers[0]!.url, database, cluster: cluster.name, now, requestLines }));
}, clickhouseRuns);

describeStoreContract("ClickHouse (two shards, two servers)", async (now, requestLines) => {
  await emptyShards();
  return reopenable(() =>
    openAlternating(() => openClickHouseBackend({ url: cluster.servers[0]!.url, database, cluster: cluster.name, now, requestLines })),
  );
}, clickhouseRuns);

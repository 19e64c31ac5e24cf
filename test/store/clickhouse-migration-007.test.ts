import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { LogReadRequestSchema, LogUsageRequestSchema, StatsRequestSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { defaultLimits } from "../../src/limits.js";
import { createOffsetCodec } from "../../src/query/offset-codec.js";
import { planQuery } from "../../src/query/logsql/plan-query.js";
import { planRead } from "../../src/query/read-plan.js";
import { planStats } from "../../src/query/stats-plan.js";
import { planUsage } from "../../src/query/usage-plan.js";
import { openClickHouseBackend } from "../../src/store/clickhouse/clickhouse-backend.js";
import { columnNames } from "../../src/store/clickhouse/migrations/001-init.js";
import { readBackSql, requestsRead } from "../../src/store/clickhouse/rows/request-row.js";
import { sqlString } from "../../src/store/clickhouse/rows/sql-literal.js";
import { prepareRequestLog } from "../../src/write/prepare-request-log.js";
import { type ClickHouseServer, olderDatabase, queryRows, startClickHouse } from "../helpers/clickhouse-server.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";

vi.setConfig({ hookTimeout: 600_000, testTimeout: 360_000 });

let server: ClickHouseServer;
beforeAll(async () => {
  server = await startClickHouse({ name: "reqlog-migration-007-" });
});
afterAll(async () => {
  await server?.stop();
});

const signal = new AbortController().signal;
type Opened = Awaited<ReturnType<typeof openClickHouseBackend>>;
const query = <T>(sql: string) => queryRows<T>(server, sql);
/** A statement run in a database (requestsRead names `requests` unqualified). */
const queryIn = <T>(database: string, sql: string) => queryRows<T>(server, sql, database);

/** The rows of `database`'s requests as 006 stored them: method and HTTP version as their texts, set_fields without 007's mark. */
const as006 = (database: string) => {
  const columns = columnNames.map((c) =>
    c === "method" || c === "http_version" ? `${c}_text AS ${c}` : c === "set_fields" ? "bitAnd(set_fields, toUInt64(4611686018427387903)) AS set_fields" : c,
  );
  return `SELECT ${columns.join(", ")} FROM (SELECT *, ${readBackSql("method")} AS method_text, ${readBackSql("http_version")} AS http_version_text FROM ${database}.requests)`;
};

describe("ClickHouse's coded method and HTTP version (migration 007)", () => {
  it("stores a known value as one character, reads every value back as written, and reads rows stored before as they are", async () => {
    const database = `reqlog_m007_codes_${process.pid}`;
    const values = {
      method: ["GET", "PROPFIND", "TRACE", "\u0010", "\u0019", "\u001fx", "get", "DELETE"],
      http_version: ["HTTP/1.1", "HTTP/2.0", "HTTP/0.9", "HTTP/1.1 ", "", "\u0011", "\u001f", "HTTP/3"],
    };
    try {
      await olderDatabase(server, database, 7, "default", []);
      // Through the requests' view (seq 1–8), and as a build before 007 stored them (seq 11–18: no mark).
      const rows = (seq: number) =>
        values.method.map((m, i) => `('app', 'r${seq + i}', ${seq + i}, ${sqlString(m)}, ${sqlString(values.http_version[i]!)})`).join(", ");
      await server.client.command({ query: `INSERT INTO ${database}.request_changes (app, request_id, seq, method, http_version) VALUES ${rows(1)}` });
      await server.client.command({ query: `INSERT INTO ${database}.requests (app, request_id, seq, method, http_version) VALUES ${rows(11)}` });
      const read = await queryIn<{ method: string; http_version: string; m: string; h: string }>(
        database,
        `SELECT method, http_version, length(m) AS m, length(h) AS h
         FROM (SELECT seq, method, http_version FROM ${requestsRead("")})
         ANY INNER JOIN (SELECT seq, method AS m, http_version AS h FROM requests) USING seq ORDER BY seq`,
      );
      expect(read.map((r) => r.method)).toEqual([...values.method, ...values.method]);
      expect(read.map((r) => r.http_version)).toEqual([...values.http_version, ...values.http_version]);
      // Coded: GET, TRACE, DELETE and HTTP/1.1, HTTP/2.0, HTTP/0.9, HTTP/3; a text starting with a control character one longer.
      expect(read.slice(0, 8).map((r) => [Number(r.m), Number(r.h)])).toEqual([[1, 1], [8, 1], [1, 1], [2, 9], [2, 0], [3, 2], [3, 2], [1, 1]]);
      expect(read.slice(8).map((r) => [Number(r.m), Number(r.h)])).toEqual(values.method.map((m, i) => [[...m].length, [...values.http_version[i]!].length]));
      // A condition reads the values as written.
      const found = await queryIn<{ s: string }>(database, `SELECT toString(seq) AS s FROM ${requestsRead("WHERE method = 'TRACE' OR http_version = '\\x11'")} ORDER BY seq`);
      expect(found.map((r) => r.s)).toEqual(["3", "6", "13", "16"]);
    } finally {
      await server.client.command({ query: `DROP DATABASE IF EXISTS ${database}` });
    }
  });
});

describe("ClickHouse migration 007 (coded texts)", () => {
  const hourUs = 3_600_000_000n;
  const ids = ["a", "b", "c", "d", "e"].map(rid);
  const prepared = (...logs: ReturnType<typeof minimalLog>[]) => logs.map((log) => prepareRequestLog(log, defaultLimits, "log"));
  /** The tables a 006 database keeps rows in besides requests (request_changes and its views store none). */
  const rowTables = [
    "lines", "moves", "usage_hourly", "stats_hourly", "stats_clients", "seq_marks", "statuses", "positions",
    "servers", "request_keys", "app_seqs", "search_postings", "search_terms",
  ];

  /** What a reader sees of a backend: records by id, a page, regex Reads (one indexed, one scanned), a Query, Usage and Stats. */
  async function seen(backend: Opened) {
    const offsets = createOffsetCodec(await backend.store.offsetKey(signal));
    const read = async (init: Parameters<typeof create<typeof LogReadRequestSchema>>[1]) =>
      (await backend.store.read(planRead(create(LogReadRequestSchema, { appId: "forge", ...init }), defaultLimits, offsets), signal)).records.map((r) => r.log);
    const usage = await backend.store.usage(planUsage(create(LogUsageRequestSchema, { appId: "forge" }), defaultLimits), signal);
    const stats = await backend.store.stats(planStats(create(StatsRequestSchema, { appId: "forge" }), defaultLimits), signal);
    return {
      records: await backend.store.getRequests("forge", ids, signal),
      page: await read({ count: 100n, includeIncomplete: true }),
      coded: await read({ count: 100n, combinedLogRegex: "\"(PROPFIND|DELETE) [^\"]* HTTP/[12]\\.[01]\" " }),
      delete: await read({ count: 100n, combinedLogRegex: "\"DELETE /" }),
      usage: usage.buckets.map((b) => [b.startHour, b.versionId, b.requests, b.bytes, b.lines]),
      stats: stats.records.map((r) => [r.startHour, r.route, r.statusClass, r.requests, r.errors, r.bytes]),
    };
  }

  it("turns a 006 database with rows into one that reads the same and stores new versions coded", async () => {
    const source = `reqlog_m007_source_${process.pid}`;
    const old = `reqlog_m007_old_${process.pid}`;
    const first = prepared(
      minimalLog({ requestId: ids[0]!, endTime: t0, status: 200, method: "GET", httpVersion: "HTTP/1.1", userAgent: "curl/8" }),
      minimalLog({ requestId: ids[1]!, endTime: t0 + hourUs, status: 503, method: "PROPFIND", httpVersion: "HTTP/1.1", versionId: "v2" }),
      minimalLog({ requestId: ids[2]!, startTime: t0, endTime: 0n, finished: false, method: "DELETE", httpVersion: "HTTP/2.0" }),
    );
    const then = prepared(
      minimalLog({ requestId: ids[2]!, endTime: t0 + 2n * hourUs, status: 404, method: "DELETE", httpVersion: "HTTP/2.0" }), // finishes
      minimalLog({ requestId: ids[1]!, endTime: t0 + hourUs, status: 200, method: "PROPFIND", httpVersion: "HTTP/1.1", versionId: "v2" }), // 503 → 200
      minimalLog({ requestId: ids[3]!, endTime: t0, status: 500, method: "DELETE", httpVersion: "HTTP/1.0" }),
      minimalLog({ requestId: ids[4]!, endTime: t0 + 7n, status: 201, method: "\u0011", httpVersion: "" }),
    );
    const a = await openClickHouseBackend({ url: server.url, database: source, now: () => t0 });
    const opened: Opened[] = [];
    try {
      await a.store.write(first, signal);
      // The database as 006 left it, with the rows a writer of 006 stored.
      await olderDatabase(server, old, 6, source, rowTables);
      await server.client.command({ query: `INSERT INTO ${old}.requests ${as006(source)}` });
      const stored = async () =>
        (
          await query<{ id: string; m: number; h: number; coded: number }>(
            `SELECT request_id AS id, length(method) AS m, length(http_version) AS h, bitAnd(set_fields, toUInt64(4611686018427387904)) != 0 AS coded
             FROM ${old}.requests FINAL ORDER BY id`,
          )
        ).map((r) => [r.id, Number(r.m), Number(r.h), Number(r.coded)]);
      expect(await stored()).toEqual([
        ["a", 3, 8, 0],
        ["b", 8, 8, 0],
        ["c", 6, 8, 0],
      ]);

      // Two servers start on it at once: one migrates, the other waits and finds it done.
      opened.push(...(await Promise.all([0, 1].map(() => openClickHouseBackend({ url: server.url, database: old, now: () => t0 })))));
      const [b, c] = opened as [Opened, Opened];
      expect((await query<{ version: number; name: string }>(`SELECT version, name FROM ${old}.schema_migrations ORDER BY version`)).slice(-2)).toEqual([
        { version: 6, name: "006-column-diet" },
        { version: 7, name: "007-coded-texts" },
      ]);
      expect(await query(`SELECT name FROM system.tables WHERE database = '${old}' AND name LIKE 'request_changes_4%'`)).toEqual([
        { name: "request_changes_4_requests" },
      ]);
      const before = await seen(a);
      expect(before.records.map((r) => [r.method, r.httpVersion])).toEqual([["GET", "HTTP/1.1"], ["PROPFIND", "HTTP/1.1"], ["DELETE", "HTTP/2.0"]]);
      expect(before.coded).toHaveLength(1); // b (c is not finished: the Read leaves it out)
      expect(await seen(b)).toEqual(before);

      // New versions of old rows and new requests are stored coded; every row reads as written.
      await a.store.write(then, signal);
      await b.store.write(then.slice(0, 2), signal);
      await c.store.write(then.slice(2), signal);
      const after = await seen(c);
      expect(after).toEqual(await seen(a));
      expect(after.records.map((r) => [r.method, r.httpVersion])).toEqual([
        ["GET", "HTTP/1.1"],
        ["PROPFIND", "HTTP/1.1"],
        ["DELETE", "HTTP/2.0"],
        ["DELETE", "HTTP/1.0"],
        ["\u0011", ""],
      ]);
      expect(after.coded.map((r) => new TextDecoder().decode(r.requestId))).toEqual(["c", "b", "d"]);
      expect(after.delete).toHaveLength(2);
      expect(await stored()).toEqual([
        ["a", 3, 8, 0], // stored before 007, as it was
        ["b", 8, 1, 1], // a new version: PROPFIND kept as text
        ["c", 1, 1, 1],
        ["d", 1, 1, 1],
        ["e", 2, 0, 1], // a text starting with a control character, escaped
      ]);
      // A Query groups by the values as written, whichever form a row keeps them in.
      const text = "* | stats by (method) count() as n";
      const grouped = await c.store.query({ ...planQuery({ appId: "forge", text }, defaultLimits, Number(t0)), rollup: undefined }, signal);
      expect(grouped.source).toBe("sql");
      expect(grouped.rows).toEqual([["\u0011", 1], ["DELETE", 2], ["GET", 1], ["PROPFIND", 1]]);
    } finally {
      await a.close();
      for (const backend of opened) await backend.close();
      for (const database of [source, old]) await server.client.command({ query: `DROP DATABASE IF EXISTS ${database}` });
    }
  });
});

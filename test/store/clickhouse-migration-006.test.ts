import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { LogLineSchema, LogReadRequestSchema, LogUsageRequestSchema, StatsRequestSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { parseIpRange } from "../../src/domain/ip-range.js";
import { defaultLimits } from "../../src/limits.js";
import { createOffsetCodec } from "../../src/query/offset-codec.js";
import { planRead } from "../../src/query/read-plan.js";
import { planStats } from "../../src/query/stats-plan.js";
import { planUsage } from "../../src/query/usage-plan.js";
import { openClickHouseBackend } from "../../src/store/clickhouse/clickhouse-backend.js";
import { requestsRead, selectRequests, selectStoredAsWritten, storedIp } from "../../src/store/clickhouse/rows/request-row.js";
import { sqlString } from "../../src/store/clickhouse/rows/sql-literal.js";
import { prepareRequestLog } from "../../src/write/prepare-request-log.js";
import { type ClickHouseServer, olderDatabase, queryRows, startClickHouse } from "../helpers/clickhouse-server.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";

vi.setConfig({ hookTimeout: 600_000, testTimeout: 360_000 });

let server: ClickHouseServer;
beforeAll(async () => {
  server = await startClickHouse({ name: "reqlog-migration-006-" });
});
afterAll(async () => {
  await server?.stop();
});

const signal = new AbortController().signal;
type Opened = Awaited<ReturnType<typeof openClickHouseBackend>>;
const query = <T>(sql: string) => queryRows<T>(server, sql);
/** A statement run in a database (requestsRead names `requests` unqualified). */
const queryIn = <T>(database: string, sql: string) => queryRows<T>(server, sql, database);

const ips = ["10.0.0.1", "0.0.0.0", "255.255.255.255", "192.168.7.128", "127.0.0.1", "10.0.0.01", "::1", "2001:db8::7", "", "\u0001x", "\u001fy"];

describe("ClickHouse's stored ip (migration 006)", () => {
  it("reads every ip back as written through requestsRead, filters included, and keeps a dotted IPv4 address in 5 characters", async () => {
    const stored = ips.map(storedIp);
    expect(stored.slice(0, 5).map((s) => s.length)).toEqual([5, 5, 5, 5, 5]);
    expect(stored[5]).toBe("10.0.0.01"); // not canonical: kept as text
    const database = `reqlog_m006_ips_${process.pid}`;
    try {
      await olderDatabase(server, database, 1, "default", []);
      // Rows as requests stores them: ip in its stored form, rkey 0 for every other one (its seq, read back).
      const rows = stored.map((ip, i) => `('app', 'r${i}', ${i % 2 === 0 ? 0 : 100 + i}, ${i + 1}, ${sqlString(ip)})`).join(", ");
      await server.client.command({ query: `INSERT INTO ${database}.requests (app, request_id, rkey, seq, ip) VALUES ${rows}` });
      const read = await queryIn<{ ip: string; rkey: string }>(database, `SELECT ip, toString(rkey) AS rkey FROM ${requestsRead("ORDER BY seq")}`);
      expect(read.map((r) => r.ip)).toEqual(ips);
      expect(read.map((r) => r.rkey)).toEqual(ips.map((_, i) => String(i % 2 === 0 ? i + 1 : 100 + i)));
      // A condition inside requestsRead reads the values as written too.
      const found = await queryIn<{ ip: string }>(database, selectRequests(`WHERE ip IN ('10.0.0.1', '\\x1fy') AND rkey IN (1, 11) ORDER BY seq`));
      expect(found.map((r) => r.ip)).toEqual(["10.0.0.1", "\u001fy"]);
    } finally {
      await server.client.command({ query: `DROP DATABASE IF EXISTS ${database}` });
    }
  });

  it("is read back in one place: every statement of the backend reads requests through requestsRead or names no stored form", () => {
    // A statement that read the table itself would see rkey 0 and 5-character addresses.
    const root = "src/store/clickhouse";
    const files = readdirSync(root, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts") && f !== join("rows", "request-row.ts"));
    const code = (f: string) =>
      readFileSync(join(root, f), "utf8")
        .split("\n")
        .filter((line) => !/^\s*(\*|\/\/|\/\*)/.test(line))
        .join("\n");
    const raw = files.flatMap((f) => [...code(f).matchAll(/\b(FROM|JOIN)\s+requests\b|\brequests\s+(FINAL|PREWHERE|WHERE)\b/g)].map((m) => `${f}: ${m[0]}`));
    expect(raw).toEqual([]);
    expect(files.length).toBeGreaterThan(30);
    expect(() => selectStoredAsWritten("request_id", "WHERE ip = ''")).toThrow(/stored form/);
    expect(() => selectStoredAsWritten("max(rkey)", "")).toThrow(/stored form/);
    expect(selectStoredAsWritten("request_id", "WHERE request_id = 'ip'")).toBe("SELECT request_id FROM requests WHERE request_id = 'ip'");
  });
});

describe("ClickHouse migration 006 (the column diet)", () => {
  const hourUs = 3_600_000_000n;
  const ids = ["a", "b", "c", "d", "e", "f"].map(rid);
  const line = (text: string) => create(LogLineSchema, { time: t0, level: 2, logMessage: text });
  const prepared = (...logs: ReturnType<typeof minimalLog>[]) => logs.map((log) => prepareRequestLog(log, defaultLimits, "log"));
  /** The tables a 003 database keeps rows in (request_changes and its views store none). */
  const rowTables = ["lines", "moves", "usage_hourly", "stats_hourly", "stats_clients", "seq_marks", "statuses", "positions"];

  /** What a reader sees of a backend: records by id, a page, a regex Read, Usage and Stats. */
  async function seen(backend: Opened) {
    const offsets = createOffsetCodec(await backend.store.offsetKey(signal));
    const read = async (init: Parameters<typeof create<typeof LogReadRequestSchema>>[1]) =>
      (await backend.store.read(planRead(create(LogReadRequestSchema, { appId: "forge", ...init }), defaultLimits, offsets), signal)).records.map((r) => r.log);
    const usage = await backend.store.usage(planUsage(create(LogUsageRequestSchema, { appId: "forge" }), defaultLimits), signal);
    const stats = await backend.store.stats(planStats(create(StatsRequestSchema, { appId: "forge" }), defaultLimits), signal);
    return {
      records: await backend.store.getRequests("forge", ids, signal),
      page: await read({ count: 100n, includeIncomplete: true }),
      regex: await read({ count: 100n, combinedLogRegex: "^10\\.0\\.0\\.1 .*\" 50[0-9] " }),
      ipv6: await read({ count: 100n, combinedLogRegex: "^2001:db8::7 " }),
      usage: usage.buckets.map((b) => [b.startHour, b.versionId, b.requests, b.bytes, b.lines]),
      stats: stats.records.map((r) => [r.startHour, r.route, r.statusClass, r.requests, r.errors, r.bytes]),
      ips: stats.clientIps,
    };
  }

  it("turns a 003 database with rows into one that reads the same, stores new versions narrower, and keeps each request's key", async () => {
    const source = `reqlog_m006_source_${process.pid}`;
    const old = `reqlog_m006_old_${process.pid}`;
    const first = prepared(
      minimalLog({ requestId: ids[0]!, endTime: t0, status: 200, ip: "10.0.0.1", userAgent: "curl/8", line: [line("one")] }),
      minimalLog({ requestId: ids[1]!, endTime: t0 + hourUs, status: 503, ip: "10.0.0.1", versionId: "v2" }),
      minimalLog({ requestId: ids[2]!, startTime: t0, endTime: 0n, finished: false, ip: "2001:db8::7" }),
      minimalLog({ requestId: ids[3]!, endTime: t0 + 5n, status: 404, ip: "" }),
    );
    const then = prepared(
      minimalLog({ requestId: ids[2]!, endTime: t0 + 2n * hourUs, status: 404, ip: "2001:db8::7", userAgent: "curl/8" }), // finishes
      minimalLog({ requestId: ids[1]!, endTime: t0 + hourUs, status: 200, ip: "10.0.0.1", versionId: "v2" }), // 503 → 200
      minimalLog({ requestId: ids[4]!, endTime: t0, status: 500, ip: "192.168.7.128", line: [line("two")] }),
    );
    const a = await openClickHouseBackend({ url: server.url, database: source, now: () => t0 });
    const opened: Opened[] = [];
    try {
      await a.store.write(first, signal);
      // The database as 003 left it, with the rows a writer of 003 stored:
      // today's rows with rkey and ip in their whole forms.
      await olderDatabase(server, old, 3, source, rowTables);
      await queryIn(source, `INSERT INTO ${old}.requests SELECT * FROM ${requestsRead("")}`);
      expect(await query(`SELECT count() AS n FROM ${old}.requests WHERE rkey = 0 OR length(ip) = 5`)).toEqual([{ n: "0" }]);

      // Two servers start on it at once: one migrates, the other waits and finds it done.
      opened.push(...(await Promise.all([0, 1].map(() => openClickHouseBackend({ url: server.url, database: old, now: () => t0 })))));
      const [b, c] = opened as [Opened, Opened];
      expect(await query(`SELECT version, name FROM ${old}.schema_migrations ORDER BY version`)).toEqual([
        { version: 1, name: "001-init" },
        { version: 2, name: "002-positions" },
        { version: 3, name: "003-group-rollups" },
        { version: 4, name: "004-servers" },
        { version: 5, name: "005-search" },
        { version: 6, name: "006-column-diet" },
        { version: 7, name: "007-coded-texts" },
      ]);
      expect(await query(`SELECT name FROM system.tables WHERE database = '${old}' AND name LIKE 'request_changes_4%'`)).toEqual([
        { name: "request_changes_4_requests" },
      ]);
      const before = await seen(a);
      expect(before.records.map((r) => r.ip)).toEqual(["10.0.0.1", "10.0.0.1", "2001:db8::7", ""]);
      expect(before.regex).toHaveLength(1);
      expect(await seen(b)).toEqual(before);

      // New versions of old rows keep their request's key; new requests store rkey 0 and 5-character ips.
      await a.store.write(then, signal);
      await b.store.write(then.slice(0, 2), signal);
      await c.store.write(then.slice(2), signal);
      const after = await seen(c);
      expect(after).toEqual(await seen(a));
      expect(after.records.map((r) => r.ip)).toEqual(["10.0.0.1", "10.0.0.1", "2001:db8::7", "", "192.168.7.128"]);
      expect(after.regex).toHaveLength(0);
      expect(after.ipv6).toHaveLength(1);
      const keys = async (database: string) =>
        queryIn(database, `SELECT request_id, toString(rkey) AS k FROM ${requestsRead("FINAL")} ORDER BY request_id`);
      const rkeys = await keys(old);
      const positions = await query(`SELECT request_id, toString(rkey) AS k FROM ${old}.positions FINAL WHERE deleted = 0 ORDER BY request_id`);
      expect(rkeys).toEqual(positions);
      const stored = await query<{ id: string; rkey: string; ip: string }>(
        `SELECT request_id AS id, toString(rkey) AS rkey, length(ip) AS ip FROM ${old}.requests FINAL ORDER BY id`,
      );
      expect(stored.map((r) => [r.id, r.rkey === "0", Number(r.ip)])).toEqual([
        ["a", false, 8], // stored before 006, as it was
        ["b", false, 5], // a new version of a request stored before: its rkey is not its seq
        ["c", false, 11],
        ["d", false, 0],
        ["e", true, 5],
      ]);

      // A Delete by address range and by id finds old and new rows alike, and takes each out whole.
      expect(await c.store.delete({ appId: "forge", dryRun: false, ips: [parseIpRange("192.168.0.0/16")!] }, signal)).toBe(1);
      expect(await c.store.delete({ appId: "forge", dryRun: false, requestIds: [ids[0]!] }, signal)).toBe(1);
      const left = await c.store.getRequests("forge", ids, signal);
      expect(left.map((r) => new TextDecoder().decode(r.requestId))).toEqual(["b", "c", "d"]);
    } finally {
      await a.close();
      for (const backend of opened) await backend.close();
      for (const database of [source, old]) await server.client.command({ query: `DROP DATABASE IF EXISTS ${database}` });
    }
  });
});

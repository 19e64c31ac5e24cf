import { migrations } from "../../src/store/sqlite/migrations/index.js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { StatsRequestSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { topNamesCapacity } from "../../src/domain/top-names.js";
import { defaultLimits } from "../../src/limits.js";
import { planStats } from "../../src/query/stats-plan.js";
import { openSqliteBackend, type SqliteBackend } from "../../src/store/sqlite/sqlite-backend.js";
import { maxNamesPerHour, statsNameKind } from "../../src/store/sqlite/stats/stats-rollups.js";
import { prepareRequestLog } from "../../src/write/prepare-request-log.js";
import { minimalLog, rid } from "../helpers/fixtures.js";
import { useTestServer } from "../helpers/test-server.js";
import { version4Database, version4FinishedRow } from "../helpers/version4-database.js";

const h0 = 1_795_003_200n * 1_000_000n;
const never = new AbortController().signal;

/** Request i of the hour from h0: route /r<i>, user agent ua-<i>, its own client IP. */
const distinct = (i: number, more: Parameters<typeof minimalLog>[0] = {}) =>
  minimalLog({
    requestId: rid(`d${i}`), startTime: h0 + BigInt(i), endTime: h0 + BigInt(i) + 10n, status: 200,
    urlMapEntry: `/r${i}`, userAgent: `ua-${i}`, ip: `10.1.${i >> 8}.${i & 255}`, ...more,
  });

/** The tables of migration 005, each with its row count. */
const statsTables = ["stats_names", "stats_version_hours", "stats_route_hours", "stats_hours", "stats_class_hours", "stats_route_days", "stats_agent_hours", "stats_top_names"];
const statsRowCounts = (db: ReturnType<typeof openSqliteBackend>["db"]) =>
  Object.fromEntries(statsTables.map((t) => [t, (db.prepare(`SELECT count(*) AS n FROM ${t}`).get() as { n: number }).n]));

describe("SQLite stats rollups", () => {
  const ts = useTestServer();

  it(`keeps at most ${maxNamesPerHour} routes and user agents of an hour apart (the rest count together, unnamed) and ${topNamesCapacity} client IPs in each summary`, async () => {
    const n = maxNamesPerHour + 5;
    const logs = Array.from({ length: n }, (_, i) => distinct(i));
    for (let i = 0; i < n; i += 1000) await ts.write(...logs.slice(i, i + 1000));
    const kinds = () => ts.db.prepare("SELECT kind, count(*) AS n, sum(name IS NULL) AS overflow FROM stats_names GROUP BY kind").all();
    const full = [statsNameKind.route, statsNameKind.agent, statsNameKind.routeDay].map((kind) => ({ kind, n: maxNamesPerHour + 1, overflow: 1 }));
    expect(kinds()).toEqual(full);

    const reply = await ts.client.stats({ appId: "forge", resolutionHours: 0, topN: 2 });
    expect(reply.record).toHaveLength(maxNamesPerHour + 1);
    const unnamed = reply.record.at(-1)!;
    expect([unnamed.route, unnamed.figures!.requests]).toEqual(["", 5n]);
    // Each IP made one request: the summaries of the hour and the day hold 100 of them, with estimates within max_error of 1.
    expect(reply.topClientIp).toHaveLength(2);
    for (const c of reply.topClientIp) {
      expect(c.maxError).toBeGreaterThan(0n);
      expect(c.requests - c.maxError <= 1n && 1n <= c.requests + c.maxError).toBe(true);
    }
    // A bot pattern sees only the user agents with a row of their own.
    const noBots = await ts.client.stats({ appId: "forge", resolutionHours: 0, excludeUserAgentRegex: "^ua-(0|1004)$" });
    expect(Number(noBots.total!.requests)).toBe(n - 1);

    // A name keeps its row while its hour counts requests: a newcomer still counts unnamed.
    expect(await ts.backend.maintenance.expire(h0 + 11n, 10, never)).toBe(1);
    await ts.write(distinct(n + 1));
    expect(kinds()).toEqual(full);
    const after = await ts.client.stats({ appId: "forge", resolutionHours: 0, topN: 0 });
    expect([after.record.at(-1)!.route, after.record.at(-1)!.figures!.requests]).toEqual(["", 6n]);

    // An hour that counts nothing any more leaves no rollup rows behind.
    await ts.backend.maintenance.expire(h0 + 3_600_000_000n, 10_000, never);
    expect(statsRowCounts(ts.db)).toEqual(Object.fromEntries(statsTables.map((t) => [t, 0])));
  });

  it("answers from the rollups alone: request rows deleted behind the store's back change nothing", async () => {
    await ts.write(...Array.from({ length: 20 }, (_, i) => distinct(i % 4, { requestId: rid(`q${i}`), status: 200 + (i % 3) * 100 })));
    const before = await ts.client.stats({ appId: "forge", perVersion: true });
    ts.db.prepare("DELETE FROM requests").run();
    expect(await ts.client.stats({ appId: "forge", perVersion: true })).toEqual(before);
  });
});

describe("migrations 005 and 006 on a database of version 4", () => {
  it("count the finished requests stored before them once, when the backend next opens", async () => {
    const logs = [
      // Over two days, so that day rollups are made too.
      ...Array.from({ length: 30 }, (_, i) =>
        distinct(i % 7, {
          requestId: rid(`m${i}`), ...(i % 2 ? { moduleId: "api", versionId: "v2" } : { versionId: "v1" }), latency: BigInt(i * 997),
          startTime: h0 + BigInt(i) * 3_000_000_000n, endTime: h0 + BigInt(i) * 3_000_000_000n + 10n, status: 200 + (i % 4) * 100,
        }),
      ),
    ];
    const statsOf = (b: SqliteBackend) =>
      b.store.stats(planStats(create(StatsRequestSchema, { appId: "forge", perVersion: true, topN: 100 }), defaultLimits), never);
    // The same requests written by today's writer: what Stats must answer.
    const freshFolder = mkdtempSync(join(tmpdir(), "reqlog-stats-"));
    const fresh = openSqliteBackend({ path: join(freshFolder, "reqlog.db"), readWorkers: 0, now: () => h0 });
    let expected;
    try {
      await fresh.store.write(logs.map((l, i) => prepareRequestLog(l, defaultLimits, `log[${i}]`)), never);
      expected = await statsOf(fresh);
    } finally {
      await fresh.close();
      rmSync(freshFolder, { recursive: true, force: true });
    }
    expect(expected.records.reduce((n, r) => n + r.requests, 0)).toBe(logs.length);

    const old = version4Database(logs.length + 1);
    logs.forEach((log, i) => old.insertRow(version4FinishedRow(log, i + 1)));
    // A request in progress, which Stats does not count.
    old.insertRow({ ...version4FinishedRow(minimalLog({ requestId: rid("running") }), logs.length + 1), finished: 0, end_time: 0 });
    old.db.close();
    const open = () => openSqliteBackend({ path: old.path, readWorkers: 0, now: () => h0 });
    let backend = open();
    try {
      expect(backend.db.pragma("user_version", { simple: true })).toBe(migrations.at(-1)!.version);
      expect(statsRowCounts(backend.db).stats_route_days).toBeGreaterThan(0);
      expect(await statsOf(backend)).toEqual(expected);
      expect(backend.db.prepare("SELECT count(*) AS n FROM meta WHERE key = 'stats_backfill'").get()).toEqual({ n: 0 });
      await backend.close();
      backend = open();
      expect(await statsOf(backend)).toEqual(expected);
    } finally {
      await backend.close();
      rmSync(old.folder, { recursive: true, force: true });
    }
  });
});

import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { LogReadRequestSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { defaultLimits } from "../../src/limits.js";
import { createOffsetCodec } from "../../src/query/offset-codec.js";
import { planRead } from "../../src/query/read-plan.js";
import { openClickHouseBackend } from "../../src/store/clickhouse/clickhouse-backend.js";
import type { SqlClient } from "../../src/store/clickhouse/sql-client.js";
import type { Backend } from "../../src/store/store.js";
import { prepareRequestLog } from "../../src/write/prepare-request-log.js";
import { type ClickHouseServer, queryRows, startClickHouse } from "../helpers/clickhouse-server.js";
import { minimalLog, regexReadPlan, rid, t0 } from "../helpers/fixtures.js";
import { queryCounter } from "../helpers/query-counter.js";

// Writes 30,000 requests through the store (seconds, more under load).
vi.setConfig({ hookTimeout: 300_000, testTimeout: 300_000 });

let server: ClickHouseServer;
beforeAll(async () => {
  server = await startClickHouse({ name: "reqlog-search-reads-", logQueries: true });
});
afterAll(async () => {
  await server?.stop();
});

const signal = new AbortController().signal;
const decoder = new TextDecoder();

interface Logged {
  query: string;
  read_rows: string;
  read_bytes: string;
}

/**
 * What `work` returns, and the statements ClickHouse logged as it ran that name the app `app` (and pass
 * `also`, SQL over system.query_log). It starts a second after whatever ran before: the log's times are in
 * seconds.
 */
async function loggedWhile<T>(app: string, work: () => Promise<T>, also = "1") {
  await new Promise((r) => setTimeout(r, 1100));
  const [{ since }] = await queryRows<{ since: string }>(server, "SELECT toString(now()) AS since");
  const result = await work();
  await server.client.command({ query: "SYSTEM FLUSH LOGS" });
  const statements = await queryRows<Logged>(
    server,
    `SELECT query, read_rows, read_bytes FROM system.query_log
     WHERE type = 2 AND event_time >= toDateTime('${since}') AND query LIKE '%\\'${app}\\'%' AND query NOT LIKE '%query_log%' AND ${also}`,
  );
  return { result, statements };
}

describe("a selective regex Read on ClickHouse", () => {
  it("reads its candidates' rows, not the columns of every request near them", async () => {
    const database = `reqlog_search_reads_${process.pid}`;
    const app = "searched";
    const backend = await openClickHouseBackend({ url: server.url, database, now: () => t0 + 100_000_000_000n });
    try {
      // 30,000 requests with wide columns (a user agent of 300 characters, one of ten: few dictionary
      // entries; a host of 400, which no search reads), and four under a rare resource, in four granules of
      // `requests` (8,192 rows each), two of them answered 500.
      const total = 30_000;
      const rare = new Map([[3_000, 500], [11_000, 200], [19_000, 500], [27_000, 200]]);
      const agents = Array.from({ length: 10 }, (_, i) => `agent-${i} ${"x".repeat(292)}`);
      for (let from = 0; from < total; from += 1000) {
        const batch = Array.from({ length: 1000 }, (_, j) => {
          const i = from + j;
          const status = rare.get(i);
          return prepareRequestLog(
            minimalLog({
              appId: app,
              requestId: rid(`r${String(i).padStart(6, "0")}`),
              startTime: t0 + BigInt(i) * 1000n,
              endTime: t0 + BigInt(i) * 1000n + 500n,
              finished: true,
              resource: status === undefined ? `/api/v1/items/${i}/view` : "/rare/needle.txt",
              status: status ?? 200,
              userAgent: agents[i % 10]!,
              host: `h${i}.${"y".repeat(400)}`,
            }),
            defaultLimits,
            "log",
          );
        });
        await backend.store.write(batch, signal);
      }
      // Each table in one part, as a store whose merges have settled: what the Read reads is then its own.
      for (const table of ["requests", "positions", "search_postings", "search_terms"]) {
        await server.client.command({ query: `OPTIMIZE TABLE ${database}.${table} FINAL` });
      }

      const offsets = createOffsetCodec(await backend.store.offsetKey(signal));
      const read = () =>
        backend.store.read(
          planRead(create(LogReadRequestSchema, { appId: app, count: 100n, combinedLogRegex: '/rare/needle\\.txt" 500 ' }), defaultLimits, offsets),
          signal,
        );
      await read(); // (its first statements warm the caches)
      const { result: page, statements } = await loggedWhile(app, read);

      expect(page.records.map((r) => decoder.decode(r.log.requestId))).toEqual(["r019000", "r003000"]);
      // No statement merges versions (FINAL) to find four candidates.
      expect(statements.filter((s) => /\bFINAL\b/.test(s.query)).map((s) => s.query.slice(0, 80))).toEqual([]);
      // What it reads: the four candidates' granules of the narrow columns (ids, sort times), the postings
      // and the dictionary, and the wide columns of four rows: about a megabyte. Reading every column of
      // the candidates' granules reads 4 × 8,192 × 700 B (23 MB); a scan, every user agent (9 MB).
      const bytes = statements.reduce((sum, s) => sum + Number(s.read_bytes), 0);
      if (process.env.SEARCH_DEBUG) console.log(statements.map((s) => `${s.read_rows} ${s.read_bytes} ${s.query.slice(0, 70)}`).join("\n"));
      expect(statements.length).toBeGreaterThan(0);
      expect(bytes).toBeLessThan(4_000_000);
    } finally {
      await backend.close();
      await server.client.command({ query: `DROP DATABASE IF EXISTS ${database}` });
    }
  });

  it("narrows its candidates to those under every part of the pattern, and drops no match", async () => {
    // A pattern of two parts (a resource, then a user agent): the candidates are the sort times under the
    // resource's keys (the fewer postings) that are under the agent's keys too. Each record below puts a
    // part in another place it may lie in; the scan (no index) answers the same.
    const database = `reqlog_search_also_${process.pid}`;
    const opened: Backend[] = [];
    const having = queryCounter((query) => query.includes("HAVING max(key IN"));
    const open = async (searchIndex: "always" | "never") => {
      const backend = await openClickHouseBackend({ url: server.url, database, now: () => t0 + 100_000_000n, interpose: having.interpose, searchIndex });
      opened.push(backend);
      return backend;
    };
    try {
      const indexed = await open("always");
      let at = 0n;
      const prepared = (id: string, fields: Parameters<typeof minimalLog>[0]) => {
        at += 1000n;
        const log = minimalLog({ requestId: rid(id), startTime: t0 + at, endTime: t0 + at + 500n, finished: true, httpVersion: "HTTP/1.1", status: 200, ...fields });
        return prepareRequestLog(log, defaultLimits, "log");
      };
      const write = (id: string, fields: Parameters<typeof minimalLog>[0]) => indexed.store.write([prepared(id, fields)], signal);
      // More requests under the agent than under the resource, and more under the resource than the
      // agent's few keys cost to read (so that the agent's keys narrow the resource's).
      await indexed.store.write(
        [
          ...Array.from({ length: 40 }, (_, i) => prepared(`other-${i}`, { resource: `/api/v1/items/${i}/view`, userAgent: "probe-agent/1" })),
          ...Array.from({ length: 20 }, (_, i) => prepared(`curl-${i}`, { resource: `/tools/probe?v=${i}`, userAgent: "curl/8" })),
        ],
        signal,
      );
      await write("start", { resource: "/tools/probe?v=1", userAgent: "probe-agent/1" }); // resource start, user agent
      await write("rest", { resource: "/api/v1/items/77/tools/probe?v=2", userAgent: "probe-agent/1 (x)" }); // tokens of the rest
      await write("referrer", { resource: "/tools/probe?v=3", referrer: "https://x.example/probe-agent/1", userAgent: "curl/8" }); // agent text in the referrer
      await write("stored", { resource: "/tools/probe?v=4", nickname: "alice", userAgent: "probe-agent/1" }); // line stored whole
      await write("changed", { resource: "/tools/probe?v=5", userAgent: "curl/8" }); // matches in its latest version only
      await write("changed", { resource: "/tools/probe?v=5", userAgent: "probe-agent/1" });
      await write("was", { resource: "/tools/probe?v=6", userAgent: "probe-agent/1" }); // matched in an older version only
      await write("was", { resource: "/tools/probe?v=6", userAgent: "curl/8" });
      await write("near-agent", { resource: "/tools/probe?v=7", userAgent: "curl/8" }); // the resource, not the agent
      await write("near-path", { resource: "/tools/prob?v=8", userAgent: "probe-agent/1" }); // the agent, not the resource
      const pattern = String.raw`/tools/probe\?v=\d HTTP/1\.1" 200 .*probe-agent/1`;

      const ids = async (backend: Backend) =>
        (await backend.store.read(regexReadPlan(pattern), signal)).records.map((r) => decoder.decode(r.log.requestId));
      const fromIndex = await ids(indexed);
      expect(having.seen).toBeGreaterThan(0); // (the candidates were intersected)
      expect(fromIndex).toEqual(["changed", "stored", "referrer", "rest", "start"]);
      expect(fromIndex).toEqual(await ids(await open("never")));
    } finally {
      for (const backend of opened) await backend.close();
      await server.client.command({ query: `DROP DATABASE IF EXISTS ${database}` });
    }
  });
  it("reads its candidates in rounds by sort time: a write or a Delete between rounds repeats or skips none", async () => {
    // 2,100 candidates under the resource's start (two rounds), three of them matching: the 2,000th newest
    // (the last of the first round), the 2,001st and the 2,051st. Between the rounds a request is written
    // (a newer candidate: it is not in the snapshot) or a non-matching one of the first round is deleted
    // (a candidate fewer): the page is the same.
    const matching = new Set([100, 99, 49]);
    for (const between of ["write", "delete"] as const) {
      const database = `reqlog_search_rounds_${between}_${process.pid}`;
      let backend: Backend | undefined;
      let raced = false;
      const race = async () => {
        if (between === "write") {
          const late = minimalLog({ requestId: rid("late"), startTime: t0 + 10_000_000n, endTime: t0 + 10_000_500n, finished: true, resource: "/tools/probe?v=9999", status: 500 });
          await backend!.store.write([prepareRequestLog(late, defaultLimits, "log")], signal);
        } else {
          expect(await backend!.store.delete({ appId: "forge", dryRun: false, requestIds: [rid("p2050")] }, signal)).toBe(1);
        }
      };
      backend = await openClickHouseBackend({
        url: server.url, database, now: () => t0 + 100_000_000n, searchIndex: "always",
        interpose: (sql: SqlClient): SqlClient => ({
          ...sql,
          async rows<T>(query: string, signal?: AbortSignal) {
            const rows = await sql.rows<T>(query, signal);
            // (After the first query that reads the candidates' postings: the first round's.)
            if (!raced && query.includes("FROM search_postings") && query.includes("ORDER BY sort_time DESC")) {
              raced = true;
              await race();
            }
            return rows;
          },
        }),
      });
      try {
        const logs = Array.from({ length: 2_100 }, (_, i) =>
          prepareRequestLog(
            minimalLog({
              requestId: rid(`p${i}`), startTime: t0 + BigInt(i) * 1000n, endTime: t0 + BigInt(i) * 1000n + 500n, finished: true,
              resource: `/tools/probe?v=${i}`, status: matching.has(i) ? 500 : 200,
            }),
            defaultLimits,
            "log",
          ),
        );
        await backend.store.write(logs, signal);
        const page = await backend.store.read(regexReadPlan(String.raw`/tools/probe\?v=\d+" 500 `), signal);
        expect(raced).toBe(true);
        expect(page.records.map((r) => decoder.decode(r.log.requestId))).toEqual(["p100", "p99", "p49"]);
      } finally {
        await backend.close();
        await server.client.command({ query: `DROP DATABASE IF EXISTS ${database}` });
      }
    }
  });
});

describe("a regex Read on ClickHouse that the index cannot narrow", () => {
  it.each(["auto", "never"] as const)(
    "sizes its windows by the hours' records: requests in progress days above the rest do not make it read the app (search index %s)",
    async (searchIndex) => {
      // 20,000 finished requests a second apart (5.6 hours), one in 40 answered 500, and 20 in progress,
      // which sort at their last write: ten days above. The page (the 100 newest 500s) lies in the newest
      // ~4,000 finished requests. Windows sized by the average rows a µs of the range held took the ones in
      // progress alone first, then (grown from their density) every request of the app.
      const database = `reqlog_search_windows_${searchIndex}_${process.pid}`;
      const now = t0 + 10n * 86_400_000_000n;
      const windows: string[] = [];
      const matching = queryCounter((query) => {
        const window = query.includes("match(") ? /PREWHERE (sort_time[^W]*)/.exec(query) : null;
        if (window) windows.push(window[1]!.trim());
        return window !== null;
      });
      const backend = await openClickHouseBackend({ url: server.url, database, now: () => now, searchIndex, interpose: matching.interpose });
      try {
        const total = 20_000;
        const log = (i: number, finished: boolean) =>
          prepareRequestLog(
            minimalLog({
              requestId: rid(`w${String(i).padStart(6, "0")}`),
              startTime: t0 + BigInt(i) * 1_000_000n,
              endTime: finished ? t0 + BigInt(i) * 1_000_000n + 500n : 0n,
              finished,
              resource: `/api/v1/items/${i}/view`,
              status: finished && i % 40 === 0 ? 500 : 200,
            }),
            defaultLimits,
            "log",
          );
        for (let from = 0; from < total; from += 1000) {
          await backend.store.write(Array.from({ length: 1000 }, (_, j) => log(from + j, true)), signal);
        }
        await backend.store.write(Array.from({ length: 20 }, (_, j) => log(total + j, false)), signal);
        for (const table of ["requests", "positions"]) {
          await server.client.command({ query: `OPTIMIZE TABLE ${database}.${table} FINAL` });
        }

        /** A Read of the first `count` matches, and the bytes its statements that match lines read. */
        const read = async (count: number) => {
          const { result: page, statements } = await loggedWhile(
            "forge",
            () => backend.store.read({ ...regexReadPlan(String.raw`" 5\d\d \d+ "`), count, startTime: t0 }, signal),
            "query LIKE '%match(%'",
          );
          expect(statements.length).toBeGreaterThan(0);
          return { page, bytes: statements.reduce((sum, s) => sum + Number(s.read_bytes), 0) };
        };
        await read(100); // (its first statements warm the caches)
        windows.length = 0;
        const { page, bytes } = await read(100);
        const used = [...windows];
        // A page of more than there are matches: every request's line is matched.
        const { page: all, bytes: app } = await read(1000);

        expect(page.records.map((r) => decoder.decode(r.log.requestId))).toEqual(
          Array.from({ length: 100 }, (_, k) => `w${String(total - 40 - 40 * k).padStart(6, "0")}`),
        );
        expect(all.records).toHaveLength(500);
        // Each window still reads the sort times of every request (`requests` is not ordered by time), so
        // it is the bytes that tell: the windows up to the page's end, not the whole app's lines.
        if (process.env.SEARCH_DEBUG) console.log(used.join("\n"), bytes, app);
        expect(used.length).toBeLessThanOrEqual(4);
        expect(bytes).toBeLessThan(0.6 * app);
      } finally {
        await backend.close();
        await server.client.command({ query: `DROP DATABASE IF EXISTS ${database}` });
      }
    },
  );
});

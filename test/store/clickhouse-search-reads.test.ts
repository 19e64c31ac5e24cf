import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { LogReadRequestSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { defaultLimits } from "../../src/limits.js";
import { createOffsetCodec } from "../../src/query/offset-codec.js";
import { planRead } from "../../src/query/read-plan.js";
import { openClickHouseBackend } from "../../src/store/clickhouse/clickhouse-backend.js";
import { prepareRequestLog } from "../../src/write/prepare-request-log.js";
import { type ClickHouseServer, queryRows, startClickHouse } from "../helpers/clickhouse-server.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";

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
      await new Promise((r) => setTimeout(r, 1100));
      const [{ since }] = await queryRows<{ since: string }>(server, "SELECT toString(now()) AS since");
      const page = await read();
      await server.client.command({ query: "SYSTEM FLUSH LOGS" });
      const statements = await queryRows<Logged>(
        server,
        `SELECT query, read_rows, read_bytes FROM system.query_log
         WHERE type = 2 AND event_time >= toDateTime('${since}') AND query LIKE '%\\'${app}\\'%' AND query NOT LIKE '%query_log%'`,
      );

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
});

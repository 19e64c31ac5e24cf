import { create } from "@bufbuild/protobuf";
import fc from "fast-check";
import RE2 from "re2";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { LogLineSchema, LogReadRequestSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { defaultLimits } from "../../src/limits.js";
import { createOffsetCodec } from "../../src/query/offset-codec.js";
import { planRead, re2Flags } from "../../src/query/read-plan.js";
import { openClickHouseBackend } from "../../src/store/clickhouse/clickhouse-backend.js";
import type { Backend } from "../../src/store/store.js";
import { prepareRequestLog } from "../../src/write/prepare-request-log.js";
import { type ClickHouseServer, startClickHouse } from "../helpers/clickhouse-server.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { isScan, queryCounter } from "../helpers/query-counter.js";

// Each run makes a database (migrations included) and writes through the store: seconds each.
vi.setConfig({ hookTimeout: 600_000, testTimeout: 600_000 });

let server: ClickHouseServer;
beforeAll(async () => {
  server = await startClickHouse({ name: "reqlog-search-clickhouse-" });
});
afterAll(async () => {
  await server?.stop();
});

const signal = new AbortController().signal;
const decoder = new TextDecoder();

// Field values from a few pieces, so that patterns made of the same pieces match now and then: resources with
// ids (a start and a rest), Unicode, referrers and user agents shared by many requests, lines stored whole
// (a nickname, a quote), placeholders (lines before their record).
const resourcePiece = fc.constantFrom(
  "/api/v1/repos", "/alice", "/ci-bot", "/proto/raw/go.mod", "/artifacts/", "48213", "/zip", "?sig=3fa8", "é", "/ა", "😀", "/Nov", "/GETX", "/v2",
);
const fields = fc.record({
  resource: fc.array(resourcePiece, { minLength: 1, maxLength: 4 }).map((ps) => ps.join("")),
  ip: fc.constantFrom("10.0.0.1", "192.168.7.20", "::1", "", "2001:db8::5"),
  nickname: fc.option(fc.constantFrom("alice", "bob smith"), { nil: undefined, freq: 6 }),
  userAgent: fc.option(fc.constantFrom("curl/8.5.0", "Mozilla/5.0 (X11) Firefox/128.0", "go.mod-agent", 'say "hi"'), { nil: undefined }),
  referrer: fc.option(fc.constantFrom("https://dl.forge.example/alice", "https://forge.example/bob/go.mod"), { nil: undefined }),
  method: fc.constantFrom("GET", "POST", "GETX"),
  httpVersion: fc.constantFrom("HTTP/1.1", "HTTP/2.0", ""),
  status: fc.constantFrom(200, 302, 500),
  end: fc.nat(5),
  finished: fc.boolean(),
});
type Fields = typeof fields extends fc.Arbitrary<infer T> ? T : never;

type Op = { kind: "write"; req: number; fields: Fields } | { kind: "flush"; req: number };
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant("write" as const), req: fc.nat(14), fields }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("flush" as const), req: fc.nat(14) }) },
);

/**
 * Patterns of each kind the SQLite index's tests try: literal-bearing (in a resource's start, its rest, across
 * the two, a referrer, a user agent, a line stored whole), case-folded, literal-free, alternations, Unicode,
 * and none that can match.
 */
const patterns = [
  "go\\.mod", "ci-bot/proto", "artifacts/48213", "s/48213/zip", "48213", "3fa8", "curl/8\\.5", "Firefox", "dl\\.forge\\.example/alice",
  "smith", 'say "hi', "alice", "(?i)ALICE", "(?i)GO\\.MOD", "(?i)k", "\\d{3}", '" 5\\d\\d ', ".", "(go|raw)\\.mod", "alice|bob",
  "raw/go\\.mod|zip", "é", "😀", "/ა", "(?i)é", "GETX", "HTTP/2", "nosuchthing", "10\\.0\\.0\\.1", "/api/v1/repos/ci-bot.*zip",
  "Nov/", "\\?sig=3fa8", "go\\.mod.*Firefox", "ci-bot.*dl\\.forge\\.example/alice", "3fa8\" 500 .*curl/8",
];

describe("regex Reads on ClickHouse through the search index", () => {
  it("give every pattern the same pages as a scan, and exactly the records RE2 matches", async () => {
    let run = 0;
    let narrowed = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 5, maxLength: 30 }), async (ops) => {
        const database = `reqlog_search_${process.pid}_${++run}`;
        const scans = queryCounter(isScan);
        let now = t0 + 10_000n;
        const indexed = await openClickHouseBackend({ url: server.url, database, now: () => now, interpose: scans.interpose, searchIndex: "always" });
        let scanned: Backend | undefined;
        try {
          for (const op of ops) {
            now += 10n;
            if (op.kind === "flush") {
              const request = { appId: "forge", moduleId: "default", moduleSet: false, versionId: "v1", requestId: rid(`r${op.req}`) };
              await indexed.store.flush(request, [{ time: t0 + 2n, level: 1, message: "flushed go.mod", pos: 0 }], signal);
              continue;
            }
            const f = op.fields;
            const log = minimalLog({
              requestId: rid(`r${op.req}`),
              resource: f.resource,
              ip: f.ip,
              method: f.method,
              httpVersion: f.httpVersion,
              status: f.status,
              startTime: t0,
              endTime: f.finished ? t0 + BigInt(f.end) * 100n : 0n,
              finished: f.finished,
              ...(f.nickname !== undefined && { nickname: f.nickname }),
              ...(f.userAgent !== undefined && { userAgent: f.userAgent }),
              ...(f.referrer !== undefined && { referrer: f.referrer }),
              line: [create(LogLineSchema, { time: t0 + 1n, level: 1, logMessage: "line" })],
            });
            await indexed.store.write([prepareRequestLog(log, defaultLimits, "log")], signal);
          }
          scanned = await openClickHouseBackend({ url: server.url, database, now: () => now, searchIndex: "never" });
          const all = await indexed.store.getRequests("forge", Array.from({ length: 15 }, (_, i) => rid(`r${i}`)), signal);

          for (const pattern of patterns) {
            const pages = async (backend: Backend) => {
              const offsets = createOffsetCodec(await backend.store.offsetKey(signal));
              const ids: string[][] = [];
              let after: Uint8Array | undefined;
              do {
                const request = create(LogReadRequestSchema, {
                  appId: "forge", count: 2n, includeIncomplete: true, combinedLogRegex: pattern,
                  ...(after && { offset: { requestId: offsets.encode("forge", after) } }),
                });
                const page = await backend.store.read(planRead(request, defaultLimits, offsets), signal);
                ids.push(page.records.map((r) => decoder.decode(r.log.requestId)));
                after = page.next;
              } while (after);
              return ids;
            };
            const before = scans.seen;
            const fromIndex = await pages(indexed);
            if (scans.seen === before) narrowed++;
            else if (process.env.SEARCH_DEBUG) console.log("scanned", pattern);
            const fromScan = await pages(scanned);
            expect({ pattern, pages: fromIndex }).toEqual({ pattern, pages: fromScan });
            const re = new RE2(pattern, re2Flags);
            const expected = all.filter((log) => re.test(log.combined)).map((log) => decoder.decode(log.requestId));
            expect({ pattern, ids: fromIndex.flat().sort() }).toEqual({ pattern, ids: expected.sort() });
          }
        } finally {
          await indexed.close();
          await scanned?.close();
          await server.client.command({ query: `DROP DATABASE IF EXISTS ${database}` });
        }
      }),
      { numRuns: Number(process.env.SEARCH_RUNS ?? 6) },
    );
    // The index answered most literal-bearing Reads (of 32 patterns, 6 have no literal; a dozen more
    // may lie in a number, a method, an ip or the time, or are too short: those scan).
    expect(narrowed).toBeGreaterThan(6 * 14);
  });
});

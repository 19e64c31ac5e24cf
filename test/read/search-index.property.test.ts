import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import Database from "better-sqlite3";
import fc from "fast-check";
import RE2 from "re2";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LogLineSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { defaultLimits } from "../../src/limits.js";
import { type ReadPlan, re2Flags } from "../../src/query/read-plan.js";
import { type SearchDocColumns, searchDoc } from "../../src/store/sqlite/rows/search-doc.js";
import { createStopGramsReader } from "../../src/store/sqlite/rows/stop-grams.js";
import { createSearchPlanner } from "../../src/store/sqlite/read/search-query.js";
import { openSqliteBackend, type SqliteBackend } from "../../src/store/sqlite/sqlite-backend.js";
import { createSqliteReader, type SqliteReader } from "../../src/store/sqlite/read/sqlite-reader.js";
import { searchIndexedSql, storedRowSql } from "../../src/store/sqlite/rows/sql.js";
import { prepareRequestLog } from "../../src/write/prepare-request-log.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";

const signal = new AbortController().signal;

// Field values from a few pieces, so that patterns made of the same pieces match now and then;
// quotes, a tab and a far-future time make some lines stored whole rather than derived.
// Runs of letters and digits with a digit ("alice12345", "x=1") end a resource's constant start (stored apart).
const resourcePiece = fc.constantFrom("/api/v1/repos", "/alice", "/go.mod", "/raw", "/artifacts/", "12345", "?x=1", "é", "😀", " sp", "/Nov", "/GETX");
const fields = fc.record({
  resource: fc.array(resourcePiece, { minLength: 1, maxLength: 4 }).map((ps) => ps.join("")),
  ip: fc.constantFrom("10.0.0.1", "192.168.7.20", "10.0.0.12", "::1", "", "2001:db8::5"),
  nickname: fc.option(fc.constantFrom("alice", "bob smith", "go.mod"), { nil: undefined }),
  userAgent: fc.option(fc.constantFrom("curl/8.5.0", "Mozilla/5.0 (X11) Firefox/128.0", "go.mod-agent", 'say "hi"', "tab\there"), { nil: undefined }),
  referrer: fc.option(fc.constantFrom("https://dl.forge.example/alice", "https://forge.example/bob/go.mod", ""), { nil: undefined }),
  method: fc.constantFrom("GET", "POST", "GETX"),
  httpVersion: fc.constantFrom("HTTP/1.1", "HTTP/2.0", ""),
  status: fc.constantFrom(200, 302, 500),
  responseSize: fc.constantFrom(0n, 12n, 12345n),
  // Now and then a line of the writer's own, stored whole.
  combined: fc.oneof({ weight: 6, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom("custom go.mod line", "curl alice 12345") }),
  end: fc.nat(5),
  finished: fc.boolean(),
  // Past year 9999 the line's time is not four digits: such lines are stored whole.
  farFuture: fc.constantFrom(false, false, false, false, true),
});
type Fields = typeof fields extends fc.Arbitrary<infer T> ? T : never;

type Op =
  | { kind: "write"; req: number; fields: Fields }
  | { kind: "batch"; writes: { req: number; fields: Fields }[] }
  | { kind: "flush"; req: number; level: number }
  | { kind: "expire"; before: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant("write" as const), req: fc.nat(15), fields }) },
  // Several records in one call, which may name a request twice (stored, then rewritten in the same call).
  {
    weight: 2,
    arbitrary: fc.array(fc.record({ req: fc.nat(7), fields }), { minLength: 2, maxLength: 4 }).map((writes) => ({ kind: "batch" as const, writes })),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("flush" as const), req: fc.nat(15), level: fc.nat(4) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("expire" as const), before: fc.nat(3) }) },
);

const patternPiece = fc.constantFrom(
  "go\\.mod", "alice", "/raw", "curl", "Firefox", "(?i)ALICE", "12345", "1234", "Nov", "10\\.0\\.0\\.1", "\\d+", "[a-c]lice",
  "(go|raw)", "\\.1 - ", '" 500 ', "HTTP/2", "é", "😀", " sp", ".", "x=1", "smith", "GETX", "say \\\\\"hi", "tab\\\\x09",
  "custom", "ſ", "(?i)K",
);
const patternArb = fc.oneof(
  { weight: 3, arbitrary: patternPiece },
  {
    weight: 1,
    arbitrary: fc.tuple(patternPiece, fc.constantFrom("", ".*", " "), patternPiece).map(([a, sep, b]) => a + sep + b),
  },
);

describe("the search index", () => {
  let folder: string;
  let backend: SqliteBackend;
  let scanDb: Database.Database;
  let scan: SqliteReader;
  let run = 0;

  beforeEach(() => {
    folder = mkdtempSync(join(tmpdir(), "reqlog-search-"));
    const path = join(folder, "reqlog.db");
    // Grams in more than half of each 12 documents stop being indexed: the stop set grows during a run.
    // Rows are indexed three at a time: between, the newest wait for their documents, as they do in bulk writes.
    backend = openSqliteBackend({
      path, readWorkers: 0, searchIndex: "always", now: () => t0 + 10_000n, stopGrams: { window: 12, share: 1 / 2, sample: 1 }, searchCatchUp: 3,
    });
    // The reference: the same file read by scanning, on a connection of its own.
    scanDb = new Database(path);
    scan = createSqliteReader(scanDb, "never");
  });
  afterEach(async () => {
    scanDb.close();
    await backend.close();
    rmSync(folder, { recursive: true, force: true });
  });

  const recordOf = (app: string, req: number, f: Fields) => {
    const start = f.farFuture ? 253_402_300_800_000_001n : t0;
    const end = start + BigInt(f.end) * 100n;
    const log = minimalLog({
      appId: app,
      requestId: rid(`r${req}`),
      resource: f.resource,
      ip: f.ip,
      method: f.method,
      httpVersion: f.httpVersion,
      status: f.status,
      responseSize: f.responseSize,
      startTime: start,
      endTime: f.finished ? end : 0n,
      finished: f.finished,
      ...(f.nickname !== undefined ? { nickname: f.nickname } : {}),
      ...(f.userAgent !== undefined ? { userAgent: f.userAgent } : {}),
      ...(f.referrer !== undefined ? { referrer: f.referrer } : {}),
      ...(f.combined !== undefined ? { combined: f.combined } : {}),
      line: [create(LogLineSchema, { time: t0 + 1n, level: 1, logMessage: "go.mod line" })],
    });
    // The store keeps what it is given: far-future times come from stores written before writes refused them.
    return prepareRequestLog(log, defaultLimits, "log", { latest: 2n ** 63n - 1n });
  };

  const apply = async (app: string, op: Op) => {
    if (op.kind === "write") {
      await backend.store.write([recordOf(app, op.req, op.fields)], signal);
    } else if (op.kind === "batch") {
      await backend.store.write(op.writes.map((w) => recordOf(app, w.req, w.fields)), signal);
    } else if (op.kind === "flush") {
      const request = { appId: app, moduleId: "default", moduleSet: false, versionId: "v1", requestId: rid(`r${op.req}`) };
      await backend.store.flush(request, [{ time: t0 + 2n, level: op.level, message: "flushed", pos: 0 }], signal);
    } else {
      await backend.maintenance.expire(t0 + BigInt(op.before) * 100n, 3, signal);
    }
  };

  const plan = (app: string, pattern: string, count: number, after?: Uint8Array, window?: [number, number]): ReadPlan => ({
    appId: app,
    includeIncomplete: true,
    combinedRegex: pattern,
    count,
    combinedExtras: "none",
    budget: { rows: 1_000_000_000, ms: 1_000_000_000, bytes: 1_000_000_000 },
    ...(after ? { after } : {}),
    ...(window ? { startTime: t0 + BigInt(window[0]) * 100n, endTime: t0 + BigInt(window[1]) * 100n } : {}),
  });
  const ids = (records: { log: { requestId: Uint8Array } }[]) => records.map((r) => new TextDecoder().decode(r.log.requestId));

  // Mutation-checked: the property fails when the writer does not take a
  // changed record's old document out (stale candidates are harmless to
  // Reads, but the re-index check sees them), when a placeholder that gets
  // its record is not indexed, when a piece's dictionary tokens are left out
  // of the query, when a piece that may lie in a method is asked of the
  // index as if it were indexed, when a stop gram is left out of the
  // documents of rows older than its `since`, and when the scans' prefilter
  // misses a piece inside a resource's constant start, or across its end.
  it("keeps no resource start that retention erased: a planner reads its starts again", async () => {
    const app = "erased-start";
    const fieldsOf = (resource: string): Fields => ({
      resource, ip: "10.0.0.1", nickname: undefined, userAgent: undefined, referrer: undefined, method: "GET", httpVersion: "HTTP/1.1",
      status: 200, responseSize: 0n, combined: undefined, end: 1, finished: true, farFuture: false,
    });
    await backend.store.write([recordOf(app, 1, fieldsOf("/secret-start/x1"))], signal);
    const planner = createSearchPlanner(backend.db);
    planner.plan("secret");
    expect([...planner.startsHeld()]).toContain("/secret-start/");
    await backend.maintenance.expire(t0 + 1_000n, 3, signal);
    // Compaction blanks the strings that only expired requests used.
    await backend.maintenance.compact(0n, signal);
    planner.plan("secret");
    expect([...planner.startsHeld()].filter((start) => start.includes("secret"))).toEqual([]);
    // A start written after it is read as before.
    await backend.store.write([recordOf(app, 2, fieldsOf("/other-start/y2"))], signal);
    planner.plan("other");
    expect([...planner.startsHeld()]).toContain("/other-start/");
  });

  it("gives every regex Read the same pages as a scan, with writes between pages, and equals a re-index of the rows", async () => {
    let narrowed = 0;
    let nonEmpty = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(opArb, { minLength: 5, maxLength: 30 }),
        patternArb,
        fc.integer({ min: 1, max: 4 }),
        fc.oneof(
          { weight: 3, arbitrary: fc.constant(undefined) },
          { weight: 1, arbitrary: fc.tuple(fc.nat(5), fc.nat(5)).map(([a, b]) => [Math.min(a, b), Math.max(a, b) + 1] as [number, number]) },
        ),
        fc.array(fc.array(opArb, { maxLength: 2 }), { maxLength: 6 }),
        async (ops, pattern, count, window, between) => {
          const app = `search-${run++}`;
          for (const op of ops) await apply(app, op);
          if (createSearchPlanner(backend.db).plan(pattern).match) narrowed++;

          // The model: every stored request whose combined line RE2 matches (read back as stored).
          const stored = await backend.store.getRequests(app, Array.from({ length: 16 }, (_, i) => rid(`r${i}`)), signal);
          const re = new RE2(pattern, re2Flags);
          const expected = ids(stored.filter((log) => re.test(Buffer.from(log.combined))).map((log) => ({ log }))).sort();

          const walked: string[] = [];
          let mutated = false;
          let indexed: Uint8Array | undefined;
          let scanned: Uint8Array | undefined;
          for (let page = 0; page < 50; page++) {
            const a = await backend.store.read(plan(app, pattern, count, indexed, window), signal);
            const b = scan.read(plan(app, pattern, count, scanned, window));
            expect(ids(a.records), `page ${page} of ${pattern}`).toEqual(ids(b.records));
            expect(a.next, `next of page ${page} of ${pattern}`).toEqual(b.next);
            if (page === 0 && a.records.length > 0) nonEmpty++;
            walked.push(...ids(a.records));
            indexed = a.next;
            scanned = b.next;
            if (!indexed) break;
            for (const op of between[page] ?? []) {
              await apply(app, op);
              mutated = true;
            }
          }
          // Both paths share the SQL prefilter: the model checks it (with no window, and nothing written between pages).
          if (!window && !mutated) expect(walked.sort(), `all pages of ${pattern}`).toEqual(expected);
          expectIndexEqualsRows(backend.db);
        },
      ),
      { numRuns: 200 },
    );
    // The property says something only if the index answered often, with results (at 150 runs, 39 of them once in a
    // few runs: 200 runs keep these checks clear of chance).
    expect(narrowed).toBeGreaterThan(40);
    expect(nonEmpty).toBeGreaterThan(40);
  }, 180_000);
});

/**
 * The index holds exactly the documents of the stored records up to its
 * mark, and none after it: every token of every such document finds its
 * row, and no token finds a row whose document lacks it (a record
 * rewritten or deleted left nothing behind; stop grams did not change an
 * indexed document; a row indexed late has the document of what it holds).
 */
function expectIndexEqualsRows(db: Database.Database): void {
  const stop = createStopGramsReader(db)();
  const mark = db.prepare(`SELECT ${searchIndexedSql}`).pluck().safeIntegers(true).get() as bigint;
  const rows = db.prepare(`${storedRowSql} FROM requests r WHERE r.has_record = 1 AND r.id <= ?`).safeIntegers(true).all(mark) as SearchDocColumns[];
  const expected = new Map<string, Set<bigint>>();
  for (const row of rows) {
    for (const token of searchDoc(row, stop).tokens.split(" ").filter(Boolean)) {
      if (!expected.has(token)) expected.set(token, new Set());
      expected.get(token)!.add(row.id);
    }
  }
  // Every token the index knows of (fts5vocab lists them, deleted ones until merged away).
  db.exec("CREATE VIRTUAL TABLE IF NOT EXISTS temp.search_terms USING fts5vocab(main, request_search, 'row')");
  const terms = db.prepare("SELECT term FROM temp.search_terms").pluck().all() as string[];
  const lookup = db.prepare("SELECT rowid FROM request_search WHERE request_search MATCH ?").pluck().safeIntegers(true);
  for (const token of new Set([...terms, ...expected.keys()])) {
    const found = new Set(lookup.all(`"${token}"`) as bigint[]);
    expect([...found].sort(), `postings of ${token}`).toEqual([...(expected.get(token) ?? [])].sort());
  }
}

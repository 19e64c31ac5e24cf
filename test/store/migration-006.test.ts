import { create, equals, toJsonString } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { LogLineSchema, type RequestLog, RequestLogSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { formatCombined } from "../../src/format/combined-line.js";
import { migrations } from "../../src/store/sqlite/migrations/index.js";
import { rid, t0 } from "../helpers/fixtures.js";
import { useSqliteFiles } from "../helpers/sqlite-files.js";
import { version4Database as createVersion4Database } from "../helpers/version4-database.js";

const signal = new AbortController().signal;
const files = useSqliteFiles();

/** A database as version 4 of the schema left it, holding rows as that version's writer wrote them. */
function version4Database(): string {
  const { folder, path, db, insertRow } = createVersion4Database();
  files.keep(folder);
  // A finished record with rare fields and two lines (its combined line derived).
  insertRow({
    id: 1, app_key: 1, version_key: 1, request_id: Buffer.from("done"), has_record: 1, finished: 1,
    sort_time: t0 + 500n, updated_at: t0 + 900n, seq: 5, created_seq: 2, max_level: 3, record_bytes: 100, line_count: 2,
    line_bytes: 40, module_set: 0, finished_set: null, ip: "203.0.113.9", start_time: t0, end_time: t0 + 500n, latency: 500,
    mcycles: 7, method: "GET", resource: "/api/v1/repos/alice/app/actions/artifacts/42/zip", http_version: "HTTP/1.1",
    status: 302, response_size: 0, user_agent: "curl/8.5.0", url_map_entry: "", host: "forge.example", cost: 0.25,
    replica_index: 2, clone_key: Buffer.from([1, 2]), task_name: "t1",
  });
  // A request in progress whose writer gave a line of its own (kept whole).
  insertRow({
    id: 2, app_key: 1, version_key: 2, request_id: Buffer.from("live"), has_record: 1, finished: 0,
    sort_time: t0 + 800n, updated_at: t0 + 800n, seq: 6, created_seq: 6, record_bytes: 60, line_count: 0, line_bytes: 0,
    module_set: 1, finished_set: 0, ip: "::1", nickname: "bob", start_time: t0 + 100n, end_time: 0, latency: 0, mcycles: 0,
    method: "POST", resource: "/api/v1/admin/hooks", http_version: "", status: 0, response_size: 0, referrer: "",
    url_map_entry: "/api/v1/admin/hooks", combined: 'a "custom" line',
  });
  // Lines that came before their record (a placeholder).
  insertRow({
    id: 3, app_key: 1, version_key: 1, request_id: Buffer.from("early"), has_record: 0, finished: 0,
    sort_time: t0 + 700n, updated_at: t0 + 700n, seq: 7, created_seq: 7, max_level: 1, record_bytes: 0, line_count: 1,
    line_bytes: 20, module_set: 0, finished_set: 0, ip: "", start_time: t0 + 50n, end_time: 0, latency: 0, mcycles: 0,
    method: "", resource: "", http_version: "", status: 0, response_size: 0, url_map_entry: "",
  });
  const line = db.prepare("INSERT INTO lines (request_key, time, pos, level, message) VALUES (?, ?, ?, ?, ?)");
  line.run(1, t0 + 20n, 1, 3, "second");
  line.run(1, t0 + 10n, 0, 1, "first");
  line.run(3, t0 + 50n, 0, 1, "early line");
  db.prepare("INSERT INTO moves (request_key, seq, old_sort_time) VALUES (1, 5, ?)").run(t0 + 900n);
  db.close();
  return path;
}

const line = (time: bigint, level: number, message: string) => create(LogLineSchema, { time, level, logMessage: message });

describe("migration 006 (search index and storage diet)", () => {
  it("re-encodes every stored request, which then reads back field for field, lines and all", async () => {
    const backend = files.open({ path: version4Database(), readWorkers: 0, searchIndex: "always" });
    const [done, live, early] = await backend.store.getRequests("forge", [rid("done"), rid("live"), rid("early")], signal);

    const expectedDone = create(RequestLogSchema, {
      appId: "forge", versionId: "v1", requestId: rid("done"), ip: "203.0.113.9", startTime: t0, endTime: t0 + 500n,
      latency: 500n, mcycles: 7n, method: "GET", resource: "/api/v1/repos/alice/app/actions/artifacts/42/zip",
      httpVersion: "HTTP/1.1", status: 302, responseSize: 0n, userAgent: "curl/8.5.0", urlMapEntry: "",
      host: "forge.example", cost: 0.25, replicaIndex: 2, cloneKey: new Uint8Array([1, 2]), taskName: "t1",
      line: [line(t0 + 10n, 1, "first"), line(t0 + 20n, 3, "second")],
    });
    expectedDone.combined = formatCombined(expectedDone);
    const expectedLive = create(RequestLogSchema, {
      appId: "forge", moduleId: "api", versionId: "v2", requestId: rid("live"), ip: "::1", nickname: "bob",
      startTime: t0 + 100n, endTime: 0n, latency: 0n, mcycles: 0n, method: "POST", resource: "/api/v1/admin/hooks",
      httpVersion: "", status: 0, responseSize: 0n, referrer: "", urlMapEntry: "/api/v1/admin/hooks",
      combined: 'a "custom" line', finished: false,
    });
    const same = (a: RequestLog | undefined, b: RequestLog) =>
      expect(equals(RequestLogSchema, a!, b), `${toJsonString(RequestLogSchema, a!)} vs ${toJsonString(RequestLogSchema, b)}`).toBe(true);
    same(done, expectedDone);
    same(live, expectedLive);
    expect(early!.finished).toBe(false);
    expect(early!.startTime).toBe(t0 + 50n);
    expect(early!.line.map((l) => l.logMessage)).toEqual(["early line"]);

    // The rows keep their totals and change numbers; the new id is the change that created each.
    const rows = backend.db.prepare("SELECT id, seq, line_count, line_bytes, max_level FROM requests ORDER BY id").safeIntegers(false).all();
    expect(rows).toEqual([
      { id: 2, seq: 5, line_count: 2, line_bytes: 40, max_level: 3 },
      { id: 6, seq: null, line_count: 0, line_bytes: 0, max_level: null },
      { id: 7, seq: null, line_count: 1, line_bytes: 20, max_level: 1 },
    ]);
  });

  it("indexes the stored requests for regex Reads, and later writes go on from the stored change number", async () => {
    const backend = files.open({ path: version4Database(), readWorkers: 0, searchIndex: "always" });
    const read = (pattern: string) =>
      backend.store.read(
        { appId: "forge", includeIncomplete: true, combinedRegex: pattern, count: 10, combinedExtras: "none", budget: { rows: 1000, ms: 1000, bytes: 1_000_000 } },
        signal,
      );
    const ids = async (pattern: string) => (await read(pattern)).records.map((r) => new TextDecoder().decode(r.log.requestId));
    expect(await ids("artifacts/42/zip")).toEqual(["done"]);
    expect(await ids("curl/8\\.5")).toEqual(["done"]);
    expect(await ids('"custom"')).toEqual(["live"]);
    expect(await ids("203\\.0\\.113")).toEqual(["done"]);
    expect(await ids("(?i)BOB")).toEqual([]); // the nickname is inside a line kept whole, which has no "bob"
    // The tables it replaced are gone; offsets of before it expire.
    const tables = backend.db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name IN ('lines', 'moves')").all();
    expect(tables).toEqual([]);
    expect(backend.db.prepare("SELECT value FROM meta WHERE key = 'moves_floor'").pluck().get()).toBe(7);
    // 006 and every migration after it (007 and on change settings only).
    expect(backend.db.pragma("user_version", { simple: true })).toBe(migrations.at(-1)!.version);
    expect(migrations.at(-1)!.version).toBeGreaterThanOrEqual(6);
  });
});

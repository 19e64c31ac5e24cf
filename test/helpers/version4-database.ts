import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import type { RequestLog } from "../../gen/reqlog/v1/log_service_pb.js";
import m001 from "../../src/store/sqlite/migrations/001-init.js";
import m002 from "../../src/store/sqlite/migrations/002-meta.js";
import m003 from "../../src/store/sqlite/migrations/003-tokens.js";
import m004 from "../../src/store/sqlite/migrations/004-stats.js";

/** The columns of version 4's `requests` table. */
const version4Columns = [
  "id", "app_key", "version_key", "request_id", "has_record", "finished", "sort_time", "updated_at", "seq", "created_seq",
  "max_level", "record_bytes", "line_count", "line_bytes", "module_set", "finished_set", "ip", "nickname", "start_time",
  "end_time", "latency", "mcycles", "method", "resource", "http_version", "status", "response_size", "referrer",
  "user_agent", "url_map_entry", "combined", "host", "cost", "replica_index", "clone_key", "task_name",
] as const;

export type Version4Row = Partial<Record<(typeof version4Columns)[number], unknown>>;

/**
 * A database as version 4 of the schema left it, in a new folder of its own:
 * app 1 is "forge" with versions 1 (default/v1) and 2 (api/v2), its rollups
 * consumed (no stats backfill pending), the change counter at `seq`. Rows go
 * in with `insertRow` as version 4's writer wrote them; close it before a
 * backend opens the file.
 */
export function version4Database(seq = 7): { folder: string; path: string; db: Database.Database; insertRow(row: Version4Row): void } {
  const folder = mkdtempSync(join(tmpdir(), "reqlog-v4-"));
  const path = join(folder, "reqlog.db");
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  for (const sql of [m001, m002, m003, m004]) db.exec(sql);
  db.pragma("user_version = 4");
  db.exec(`
    DELETE FROM meta WHERE key = 'stats_backfill';
    INSERT INTO apps (id, app_id) VALUES (1, 'forge');
    INSERT INTO versions (id, app_key, module_id, version_id) VALUES (1, 1, 'default', 'v1'), (2, 1, 'api', 'v2');`);
  // As an integer, as version 4 stored it (a bound JS number would be a REAL).
  db.exec(`UPDATE meta SET value = ${BigInt(seq)} WHERE key = 'seq'`);
  const insert = db.prepare(
    `INSERT INTO requests (${version4Columns.join(", ")}) VALUES (${version4Columns.map((c) => `@${c}`).join(", ")})`,
  );
  const none = Object.fromEntries(version4Columns.map((c) => [c, null]));
  return { folder, path, db, insertRow: (row) => insert.run({ ...none, ...row }) };
}

/**
 * The row version 4's writer stored for a finished record of app "forge",
 * version "v1" or "v2" (version keys 1 and 2: module "api" for "v2"), without lines,
 * its combined line derived (NULL).
 */
export function version4FinishedRow(log: RequestLog, id: number): Version4Row {
  return {
    id, app_key: 1, version_key: log.versionId === "v2" ? 2 : 1, request_id: Buffer.from(log.requestId), has_record: 1,
    finished: 1, sort_time: log.endTime, updated_at: log.endTime, seq: id, created_seq: id, max_level: null,
    record_bytes: 100, line_count: 0, line_bytes: 0, module_set: 0, finished_set: null, ip: log.ip,
    nickname: log.nickname || null, start_time: log.startTime, end_time: log.endTime, latency: log.latency,
    mcycles: log.mcycles, method: log.method, resource: log.resource, http_version: log.httpVersion, status: log.status,
    response_size: log.responseSize, referrer: log.referrer || null, user_agent: log.userAgent || null,
    url_map_entry: log.urlMapEntry, host: log.host || null,
  };
}

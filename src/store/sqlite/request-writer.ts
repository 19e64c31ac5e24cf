import { isFieldSet } from "@bufbuild/protobuf";
import type Database from "better-sqlite3";
import { RequestLogSchema } from "../../../gen/reqlog/v1/log_service_pb.js";
import type { AppLine, PreparedRecord, RequestContext } from "../../domain/records.js";
import { statsFactsOf } from "../../write/stats-facts.js";
import { lineWireBytes, recordWireBytes } from "../../write/wire-size.js";
import type { ChangeLog } from "./change-log.js";
import { sqlDerivable } from "./combined-sql.js";
import type { Keys } from "./keys.js";
import { recordColumns, recordColumnValues, toSql } from "./record-columns.js";
import { hourOf, type Rollups, type StoredRow, shareOf, statsShareOf } from "./rollups.js";
import { rowUsageColumns } from "./sql.js";

interface LineTotals {
  max_level: number | null;
  line_count: number;
  line_bytes: number;
}

/**
 * Writes of request rows and their app lines, inside the caller's
 * transaction: upserts by (app, request id), lines stored once, and every
 * change moving the row's share of the usage rollups and taking a change
 * sequence number.
 */
export function createRequestWriter(db: Database.Database, keys: Keys, changes: ChangeLog, rollups: Rollups) {
  const columnNames = recordColumns.map((f) => f.name);
  // A record's row, with `extra` columns after the field columns. Positional
  // parameters: binding ~45 named ones costs more than the insert.
  const recordInsert = (extra: string[]) => `
      INSERT INTO requests (app_key, version_key, request_id, has_record, finished, sort_time,
        updated_at, seq, created_seq, module_set, finished_set, combined, record_bytes, ${[...columnNames, ...extra].join(", ")})
      VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ${[...columnNames, ...extra].map(() => "?").join(", ")})`;

  const stmt = {
    requestByKey: db
      .prepare(`SELECT ${rowUsageColumns} FROM requests WHERE app_key = ? AND request_id = ?`)
      .safeIntegers(true),
    // A record whose row exists (a placeholder, or an earlier write of it).
    upsertRecord: db.prepare(`
      ${recordInsert([])}
      ON CONFLICT (app_key, request_id) DO UPDATE SET
        version_key = excluded.version_key, has_record = 1, finished = excluded.finished,
        record_bytes = excluded.record_bytes,
        sort_time = excluded.sort_time, updated_at = excluded.updated_at, seq = excluded.seq,
        module_set = excluded.module_set, finished_set = excluded.finished_set,
        combined = excluded.combined, ${columnNames.map((c) => `${c} = excluded.${c}`).join(", ")}`),
    // A record not stored before: its lines' totals go in with it (its lines are all new).
    insertRecord: db.prepare(recordInsert(["max_level", "line_count", "line_bytes"])),
    insertStub: db.prepare(`
      INSERT INTO requests (app_key, version_key, request_id, has_record, finished, sort_time,
        updated_at, seq, created_seq, module_set, finished_set, record_bytes, ip, start_time, end_time,
        latency, mcycles, method, resource, http_version, status, response_size, url_map_entry,
        max_level, line_count, line_bytes)
      VALUES (@app, @version, @request_id, 0, 0, @now, @now, @seq, @seq, @module_set, 0, 0, '', @first,
        0, 0, 0, '', '', '', 0, 0, '', @max_level, @line_count, @line_bytes)`),
    touch: db.prepare(`
      UPDATE requests SET updated_at = @now, sort_time = @sort_time, seq = @seq,
        start_time = CASE WHEN has_record = 0 THEN min(start_time, @first) ELSE start_time END
      WHERE id = @id`),
    insertLine: db.prepare(
      "INSERT OR IGNORE INTO lines (request_key, time, pos, level, message) VALUES (?, ?, ?, ?, ?)",
    ),
    addLines: db.prepare(`
      UPDATE requests SET max_level = max(coalesce(max_level, -1), ?),
        line_count = line_count + ?, line_bytes = line_bytes + ? WHERE id = ?`),
  };

  /** Stores the lines not stored yet; returns how many were new and their bytes. */
  function insertLines(requestKey: bigint, lines: readonly AppLine[]): { added: number; bytes: number } {
    let added = 0;
    let bytes = 0;
    let maxLevel = -1;
    for (const line of lines) {
      if (stmt.insertLine.run(requestKey, line.time, line.pos, line.level, line.message).changes > 0) {
        added++;
        bytes += lineWireBytes(line);
      }
      if (line.level > maxLevel) maxLevel = line.level;
    }
    if (lines.length > 0) stmt.addLines.run(maxLevel, added, bytes, requestKey);
    return { added, bytes };
  }

  /**
   * Inserts a request row not stored before (by `insertRow`, given its lines'
   * count, bytes and highest level, so the row is written once), then its lines.
   */
  function insertWithLines(insertRow: (totals: LineTotals) => bigint, lines: readonly AppLine[]): { added: number; bytes: number } {
    let bytes = 0;
    let maxLevel = -1;
    for (const line of lines) {
      bytes += lineWireBytes(line);
      if (line.level > maxLevel) maxLevel = line.level;
    }
    const id = insertRow({ max_level: lines.length > 0 ? maxLevel : null, line_count: lines.length, line_bytes: bytes });
    // A record's lines differ by position, so all are new; were one not, the totals are put right.
    let ignored = 0;
    let ignoredBytes = 0;
    for (const line of lines) {
      if (stmt.insertLine.run(id, line.time, line.pos, line.level, line.message).changes === 0) {
        ignored++;
        ignoredBytes += lineWireBytes(line);
      }
    }
    if (ignored > 0) stmt.addLines.run(maxLevel, -ignored, -ignoredBytes, id);
    return { added: lines.length - ignored, bytes: bytes - ignoredBytes };
  }

  /**
   * Adds lines to an existing row: a change (new seq); an in-progress row
   * moves to now. Its share of the stats rollups stays: a finished row keeps
   * its sort time, and one in progress counts in no stats.
   */
  function flushInto(existing: StoredRow, lines: readonly AppLine[], at: bigint, first: bigint): number {
    if (lines.length === 0) return 0;
    const changeSeq = changes.next();
    const sortTime = existing.finished === 1n ? existing.sort_time : at;
    changes.noteMove(existing.id, existing.sort_time, sortTime, changeSeq);
    stmt.touch.run({ now: at, sort_time: sortTime, seq: changeSeq, first, id: existing.id });
    const { added, bytes } = insertLines(existing.id, lines);
    rollups.move(shareOf(existing), shareOf({
      ...existing,
      sort_time: sortTime,
      line_count: existing.line_count + BigInt(added),
      line_bytes: existing.line_bytes + BigInt(bytes),
    }));
    return added;
  }

  return {
    /** Upserts one record with its lines at server time `at`; returns how many lines were new. */
    writeRecord(record: PreparedRecord, at: bigint): number {
      const log = record.log;
      const app = keys.app(log.appId);
      const requestId = toSql(RequestLogSchema.field.requestId, log.requestId);
      const existing = stmt.requestByKey.get(app, requestId) as StoredRow | undefined;
      if (existing && existing.has_record === 1n && existing.finished === 1n && !log.finished) {
        // A finished record is never turned back into an in-progress one by a
        // late or retried in-progress write; its lines are still kept.
        return flushInto(existing, record.lines, at, log.startTime);
      }
      const changeSeq = changes.next();
      const sortTime = log.finished ? log.endTime : at;
      const versionKey = keys.version(app, log.moduleId, log.versionId);
      const recordBytes = recordWireBytes(log);
      const values: unknown[] = [
        app,
        versionKey,
        requestId,
        log.finished ? 1 : 0,
        sortTime,
        at,
        changeSeq,
        changeSeq,
        isFieldSet(log, RequestLogSchema.field.moduleId) ? 1 : 0,
        isFieldSet(log, RequestLogSchema.field.finished) ? (log.finished ? 1 : 0) : null,
        // NULL: derived again on read, in JS and (for RE2 filters) in SQL.
        record.storedCombined ?? (sqlDerivable(log) ? null : log.combined),
        recordBytes,
      ];
      values.push(...recordColumnValues(log));
      let added: number;
      let bytes: number;
      if (existing) {
        changes.noteMove(existing.id, existing.sort_time, sortTime, changeSeq);
        stmt.upsertRecord.run(values);
        ({ added, bytes } = insertLines(existing.id, record.lines));
      } else {
        ({ added, bytes } = insertWithLines(
          (t) => BigInt(stmt.insertRecord.run(...values, t.max_level, t.line_count, t.line_bytes).lastInsertRowid),
          record.lines,
        ));
      }
      rollups.move(existing && shareOf(existing), shareOf({
        app_key: BigInt(app),
        version_key: BigInt(versionKey),
        sort_time: sortTime,
        has_record: 1n,
        record_bytes: BigInt(recordBytes),
        line_count: (existing?.line_count ?? 0n) + BigInt(added),
        line_bytes: (existing?.line_bytes ?? 0n) + BigInt(bytes),
      }));
      rollups.moveStats(
        existing && statsShareOf(existing),
        log.finished ? { appKey: app, versionKey, hour: hourOf(sortTime), facts: statsFactsOf(log) } : undefined,
      );
      return added;
    },

    /** Stores app lines of one request (a placeholder row until its record arrives); returns how many were new. */
    flushLines(request: RequestContext, lines: readonly AppLine[], at: bigint): number {
      if (lines.length === 0) return 0;
      const app = keys.app(request.appId);
      const requestId = toSql(RequestLogSchema.field.requestId, request.requestId);
      const first = lines.reduce((min, l) => (l.time < min ? l.time : min), lines[0]!.time);
      const existing = stmt.requestByKey.get(app, requestId) as StoredRow | undefined;
      if (existing) return flushInto(existing, lines, at, first);
      const version = keys.version(app, request.moduleId, request.versionId);
      const seqOfStub = changes.next();
      const { added, bytes } = insertWithLines(
        (totals) =>
          BigInt(
            stmt.insertStub.run({
              app,
              version,
              request_id: requestId,
              now: at,
              seq: seqOfStub,
              module_set: request.moduleSet ? 1 : 0,
              first,
              ...totals,
            }).lastInsertRowid,
          ),
        lines,
      );
      rollups.move(undefined, shareOf({
        app_key: BigInt(app),
        version_key: BigInt(version),
        sort_time: at,
        has_record: 0n,
        record_bytes: 0n,
        line_count: BigInt(added),
        line_bytes: BigInt(bytes),
      }));
      return added;
    },
  };
}
export type RequestWriter = ReturnType<typeof createRequestWriter>;

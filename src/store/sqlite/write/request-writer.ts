import { isFieldSet } from "@bufbuild/protobuf";
import type Database from "better-sqlite3";
import { RequestLogSchema } from "../../../../gen/reqlog/v1/log_service_pb.js";
import type { AppLine, PreparedRecord, RequestContext } from "../../../domain/records.js";
import { checkRequestLines, type RequestLineCap } from "../../../write/request-line-cap.js";
import { statsFactsOf } from "../../../write/stats-facts.js";
import { lineWireBytes, recordWireBytes } from "../../../write/wire-size.js";
import type { CommittedWrites } from "../../committed-writes.js";
import type { NewLines } from "../../store.js";
import type { ChangeLog } from "./change-log.js";
import type { Keys } from "../rows/keys.js";
import { encodeLines, mergeLines } from "../rows/line-blob.js";
import { hourOf, type Rollups, type StoredRow, shareOf, statsShareOf } from "./rollups.js";
import { docColumnsOf, type SearchDocColumns, type SearchIndex } from "../rows/search-doc.js";
import { storedRowSql } from "../rows/sql.js";
import { fieldColumns, recordValues } from "../rows/stored-record.js";
import type { Strings } from "../rows/strings.js";

/** A stored row as a write reads it: its shares of the rollups, its lines and its search document's columns. */
type ExistingRow = StoredRow & SearchDocColumns & { max_level: bigint | null; lines: Buffer | null };

const requestId = (id: Uint8Array) => Buffer.from(id.buffer, id.byteOffset, id.byteLength);

/** Line totals of lines about to be stored. */
function totalsOf(lines: readonly AppLine[]): { bytes: number; maxLevel: number } {
  let bytes = 0;
  let maxLevel = -1;
  for (const line of lines) {
    bytes += lineWireBytes(line);
    if (line.level > maxLevel) maxLevel = line.level;
  }
  return { bytes, maxLevel };
}

/**
 * Writes of request rows (with their app lines, stored-record.ts and
 * line-blob.ts) inside the caller's transaction: upserts by (app, request
 * id), lines stored once, the search document kept equal to the row, and
 * every change moving the row's share of the rollups and taking a change
 * sequence number (a new row's is its id; a changed row's is noted in
 * `updates` with where it stood).
 */
export function createRequestWriter(
  db: Database.Database,
  keys: Keys,
  strings: Strings,
  search: SearchIndex,
  changes: ChangeLog,
  rollups: Rollups,
  notes: CommittedWrites,
  cap: RequestLineCap,
): RequestWriter {
  const head = [
    "app_key", "version_key", "request_id", "has_record", "finished", "sort_time", "seq", "max_level", "record_bytes",
    "line_count", "line_bytes", "module_set", "finished_set",
  ];
  const recordColumns = [...head, ...fieldColumns, "lines"];
  const stmt = {
    existing: db.prepare(`${storedRowSql}, r.max_level, r.lines FROM requests r WHERE r.app_key = ? AND r.request_id = ?`).safeIntegers(true),
    // Positional parameters: binding ~30 named ones costs more than the insert.
    insertNew: db.prepare(`
      INSERT INTO requests (id, ${recordColumns.join(", ")}) VALUES (?, ${recordColumns.map(() => "?").join(", ")})
      ON CONFLICT (app_key, request_id) DO NOTHING`),
    update: db.prepare(`UPDATE requests SET ${recordColumns.map((c) => `${c} = ?`).join(", ")} WHERE id = ?`),
    insertStub: db.prepare(`
      INSERT INTO requests (id, app_key, version_key, request_id, has_record, finished, sort_time, max_level,
        record_bytes, line_count, line_bytes, module_set, finished_set, ip, start_time, end_time, latency, mcycles,
        resource, status, response_size, lines)
      VALUES (?, ?, ?, ?, 0, 0, ?, ?, 0, ?, ?, ?, 0, '', ?, 0, 0, 0, '', 0, 0, ?)`),
    touch: db.prepare(`
      UPDATE requests SET sort_time = @sort_time, seq = @seq, lines = @lines, max_level = @max_level,
        line_count = line_count + @added, line_bytes = line_bytes + @bytes,
        start_time = CASE WHEN has_record = 0 THEN min(start_time, @first) ELSE start_time END
      WHERE id = @id`),
  };

  /**
   * Adds lines to an existing row: a change (new seq); an in-progress row
   * moves to now. Its share of the stats rollups stays: a finished row keeps
   * its sort time, and one in progress counts in no stats.
   */
  function flushInto(
    existing: ExistingRow, request: NewLines["request"] & { requestId: Uint8Array }, lines: readonly AppLine[], at: bigint, first: bigint, changeSeq = changes.next(),
  ): number {
    if (lines.length === 0) return 0;
    const sortTime = existing.finished === 1n ? existing.sort_time : at;
    changes.noteUpdate(existing.id, existing.sort_time, changeSeq);
    const merged = mergeLines(existing.lines, lines);
    const { bytes, maxLevel } = totalsOf(merged.added);
    if (merged.added.length > 0) {
      checkRequestLines(existing.line_count + BigInt(merged.added.length), existing.line_bytes + BigInt(bytes), cap, request.requestId);
    }
    const storedMax = existing.max_level === null ? -1 : Number(existing.max_level);
    stmt.touch.run({
      sort_time: sortTime,
      seq: changeSeq,
      lines: merged.blob,
      max_level: Math.max(storedMax, maxLevel) < 0 ? null : Math.max(storedMax, maxLevel),
      added: merged.added.length,
      bytes,
      first,
      id: existing.id,
    });
    rollups.move(shareOf(existing), shareOf({
      ...existing,
      sort_time: sortTime,
      line_count: existing.line_count + BigInt(merged.added.length),
      line_bytes: existing.line_bytes + BigInt(bytes),
    }));
    if (merged.added.length > 0 && notes.watchingLines) notes.lines({ request, lines: merged.added });
    return merged.added.length;
  }

  return {
    /** Upserts one record with its lines at server time `at`; returns how many lines were new. */
    writeRecord(record: PreparedRecord, at: bigint): number {
      const log = record.log;
      const app = keys.app(log.appId);
      const id = requestId(log.requestId);
      const changeSeq = changes.next();
      const sortTime = log.finished ? log.endTime : at;
      const versionKey = keys.version(app, log.moduleId, log.versionId);
      const recordBytes = recordWireBytes(log);
      const fields = recordValues(record, strings.key);
      const finishedSet = isFieldSet(log, RequestLogSchema.field.finished) ? (log.finished ? 1 : 0) : null;
      const moduleSet = isFieldSet(log, RequestLogSchema.field.moduleId) ? 1 : 0;

      // A request never stored (nearly every write) is inserted without a
      // lookup first: the unique index finds a stored one as it inserts
      // (ON CONFLICT DO NOTHING), and only then is the row read and updated.
      const own = mergeLines(undefined, record.lines);
      const { bytes: newBytes, maxLevel: newMax } = totalsOf(own.added);
      // More lines than a request may hold, whether or not it is stored already.
      if (own.added.length > 0) checkRequestLines(own.added.length, newBytes, cap, log.requestId);
      const inserted = stmt.insertNew.run(
        changeSeq, app, versionKey, id, 1, log.finished ? 1 : 0, sortTime, null, newMax < 0 ? null : newMax, recordBytes,
        own.added.length, newBytes, moduleSet, finishedSet, ...fields, own.blob,
      );
      if (inserted.changes === 1) {
        // Its search document is made later, with others (search-doc.ts catchUp).
        rollups.move(undefined, {
          appKey: app, versionKey, hour: hourOf(sortTime), requests: 1, bytes: recordBytes + newBytes, lines: own.added.length,
        });
        if (log.finished) {
          const facts = statsFactsOf(log);
          rollups.moveStats(undefined, { appKey: app, versionKey, hour: hourOf(sortTime), facts });
          if (notes.watching) notes.finished({ log, facts, maxLevel: newMax });
        }
        if (own.added.length > 0 && notes.watchingLines) notes.lines({ request: log, lines: own.added });
        return own.added.length;
      }

      const existing = stmt.existing.get(app, id) as ExistingRow;
      if (existing.has_record === 1n && existing.finished === 1n && !log.finished) {
        // A finished record is never turned back into an in-progress one by a
        // late or retried in-progress write; its lines are still kept.
        return flushInto(existing, log, record.lines, at, log.startTime, changeSeq);
      }
      const merged = mergeLines(existing.lines, record.lines);
      const { bytes, maxLevel } = totalsOf(merged.added);
      const storedMax = existing.max_level == null ? -1 : Number(existing.max_level);
      const lineCount = existing.line_count + BigInt(merged.added.length);
      const lineBytes = existing.line_bytes + BigInt(bytes);
      if (merged.added.length > 0) checkRequestLines(lineCount, lineBytes, cap, log.requestId);
      changes.noteUpdate(existing.id, existing.sort_time, changeSeq);
      stmt.update.run(
        app, versionKey, id, 1, log.finished ? 1 : 0, sortTime, changeSeq,
        Math.max(storedMax, maxLevel) < 0 ? null : Math.max(storedMax, maxLevel), recordBytes, lineCount, lineBytes, moduleSet,
        finishedSet, ...fields, merged.blob, existing.id,
      );
      if (search.covers(existing.id)) {
        const doc = docColumnsOf(existing.id, fields, log.resource);
        if (existing.has_record === 1n) search.replace(existing, doc);
        else search.add(doc, changeSeq + 1n);
      }
      rollups.move(shareOf(existing), shareOf({
        app_key: BigInt(app),
        version_key: BigInt(versionKey),
        sort_time: sortTime,
        has_record: 1n,
        record_bytes: BigInt(recordBytes),
        line_count: lineCount,
        line_bytes: lineBytes,
      }));
      const before = statsShareOf(existing);
      const facts = log.finished ? statsFactsOf(log) : undefined;
      rollups.moveStats(before, facts && { appKey: app, versionKey, hour: hourOf(sortTime), facts });
      // Newly finished: not stored finished before (a finished record sent again or rewritten was).
      if (facts && before === undefined && notes.watching) {
        notes.finished({ log, facts, maxLevel: Math.max(storedMax, maxLevel) });
      }
      if (merged.added.length > 0 && notes.watchingLines) notes.lines({ request: log, lines: merged.added });
      return merged.added.length;
    },

    /** Stores app lines of one request (a placeholder row until its record arrives); returns how many were new. */
    flushLines(request: RequestContext, lines: readonly AppLine[], at: bigint): number {
      if (lines.length === 0) return 0;
      const app = keys.app(request.appId);
      const first = lines.reduce((min, l) => (l.time < min ? l.time : min), lines[0]!.time);
      const existing = stmt.existing.get(app, requestId(request.requestId)) as ExistingRow | undefined;
      if (existing) return flushInto(existing, request, lines, at, first);
      const version = keys.version(app, request.moduleId, request.versionId);
      const id = changes.next();
      const { bytes, maxLevel } = totalsOf(lines);
      checkRequestLines(lines.length, bytes, cap, request.requestId);
      stmt.insertStub.run(
        id, app, version, requestId(request.requestId), at, maxLevel, lines.length, bytes, request.moduleSet ? 1 : 0,
        first, encodeLines(lines),
      );
      if (notes.watchingLines) notes.lines({ request, lines });
      rollups.move(undefined, shareOf({
        app_key: BigInt(app),
        version_key: BigInt(version),
        sort_time: at,
        has_record: 0n,
        record_bytes: 0n,
        line_count: BigInt(lines.length),
        line_bytes: BigInt(bytes),
      }));
      return lines.length;
    },
  };
}
export interface RequestWriter {
  /** Upserts one record with its lines at server time `at`; returns how many lines were new. */
  writeRecord(record: PreparedRecord, at: bigint): number;
  /**
   * Stores app lines of one request (a placeholder row until its record arrives); returns how many were new.
   */
  flushLines(request: RequestContext, lines: readonly AppLine[], at: bigint): number;
}

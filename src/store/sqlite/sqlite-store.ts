import { create, isFieldSet } from "@bufbuild/protobuf";
import type Database from "better-sqlite3";
import {
  type InstanceStatus,
  InstanceStatusSchema,
  RequestLogSchema,
} from "../../../gen/reqlog/v1/log_service_pb.js";
import type { Clock } from "../../clock.js";
import type { PreparedRecord } from "../../write/prepare-request-log.js";
import type { AppLine } from "../../write/validate-lines.js";
import { lineWireBytes, recordWireBytes } from "../../write/wire-size.js";
import type { InstanceKey, RequestContext, StatusFilter, Store, WriteResult } from "../store.js";
import { sqlDerivable } from "./combined-sql.js";
import { recordColumns, recordColumnValues, toSql } from "./record-columns.js";
import { createReadPool } from "./read-pool.js";
import { createRollups, hourOf, type UsageShare } from "./rollups.js";
import { createSqliteReader } from "./sqlite-reader.js";
import { createUsageReader } from "./sqlite-usage.js";
import { storageError } from "./storage-error.js";
import { createWriteBatcher } from "./write-batcher.js";

type Row = Record<string, unknown>;

/** What a write needs to know of a stored row (read with safeIntegers). */
interface ExistingRow extends RowUsage {
  id: bigint;
  finished: bigint;
}

/** The columns that decide a row's share of the usage rollups. */
interface RowUsage {
  app_key: bigint;
  version_key: bigint;
  sort_time: bigint;
  has_record: bigint;
  record_bytes: bigint;
  line_count: bigint;
  line_bytes: bigint;
}

function shareOf(row: RowUsage): UsageShare {
  return {
    appKey: Number(row.app_key),
    versionKey: Number(row.version_key),
    hour: hourOf(row.sort_time),
    requests: Number(row.has_record),
    bytes: Number(row.record_bytes + row.line_bytes),
    lines: Number(row.line_count),
  };
}

/**
 * The SQLite store. Every public method owns one transaction (writes share
 * theirs through the group-commit batcher); private helpers take the handle.
 */
export interface SqliteStoreOptions {
  /**
   * Worker threads that run Reads on connections of their own (0: Reads run
   * on the calling thread). Needs a database file, not ":memory:".
   */
  readWorkers?: number;
}

export function createSqliteStore(db: Database.Database, now: Clock, options: SqliteStoreOptions = {}): Store {
  const listeners = new Set<() => void>();
  // App and version keys, cached. An id inserted by a write that is then
  // rolled back must not survive it: the caches are dropped whenever a write
  // fails or a group does not commit.
  const appKeys = new Map<string, number>();
  const versionKeys = new Map<string, number>();
  const forgetKeys = () => {
    appKeys.clear();
    versionKeys.clear();
  };
  const batcher = createWriteBatcher(
    db,
    () => {
      for (const listener of listeners) listener();
    },
    forgetKeys,
  );
  const reader = createSqliteReader(db);
  const rollups = createRollups(db);
  const usage = createUsageReader(db);
  const pool = options.readWorkers && !db.memory ? createReadPool(db.name, options.readWorkers) : undefined;
  const columnNames = recordColumns.map((f) => f.name);
  // A record's row, with `extra` columns after the field columns. Positional
  // parameters: binding ~45 named ones costs more than the insert.
  const recordInsert = (extra: string[]) => `
      INSERT INTO requests (app_key, version_key, request_id, has_record, finished, sort_time,
        updated_at, seq, created_seq, module_set, finished_set, combined, record_bytes, ${[...columnNames, ...extra].join(", ")})
      VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ${[...columnNames, ...extra].map(() => "?").join(", ")})`;

  const stmt = {
    appKey: db.prepare("SELECT id FROM apps WHERE app_id = ?").pluck(),
    insertApp: db.prepare("INSERT INTO apps (app_id) VALUES (?)"),
    versionKey: db
      .prepare("SELECT id FROM versions WHERE app_key = ? AND module_id = ? AND version_id = ?")
      .pluck(),
    insertVersion: db.prepare("INSERT INTO versions (app_key, module_id, version_id) VALUES (?, ?, ?)"),
    requestByKey: db
      .prepare(`
        SELECT id, app_key, version_key, has_record, finished, sort_time, record_bytes, line_count, line_bytes
        FROM requests WHERE app_key = ? AND request_id = ?`)
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
    insertMove: db.prepare("INSERT OR IGNORE INTO moves (request_key, seq, old_sort_time) VALUES (?, ?, ?)"),
    lastSeq: db.prepare("SELECT value FROM meta WHERE key = 'seq'").pluck().safeIntegers(true),
    saveSeq: db.prepare("UPDATE meta SET value = ? WHERE key = 'seq'"),
    insertLine: db.prepare(
      "INSERT OR IGNORE INTO lines (request_key, time, pos, level, message) VALUES (?, ?, ?, ?, ?)",
    ),
    addLines: db.prepare(`
      UPDATE requests SET max_level = max(coalesce(max_level, -1), ?),
        line_count = line_count + ?, line_bytes = line_bytes + ? WHERE id = ?`),
    setStatus: db.prepare(`
      INSERT INTO statuses (app_id, module_id, version_id, instance_id, status, time)
      VALUES (?, ?, ?, ?, ?, ?)
      ON CONFLICT (app_id, module_id, version_id, instance_id)
      DO UPDATE SET status = excluded.status, time = excluded.time`),
    listStatus: db
      .prepare(`
        SELECT app_id, module_id, version_id, instance_id, status, time FROM statuses
        WHERE app_id = @app AND (@module IS NULL OR module_id = @module)
          AND (@version IS NULL OR version_id = @version)
        ORDER BY module_id, version_id, instance_id`)
      .safeIntegers(true),
    offsetKey: db.prepare("SELECT value FROM meta WHERE key = 'offset_key'").pluck(),
    apps: db.prepare("SELECT id FROM apps").pluck(),
    expiring: db
      .prepare(`
        SELECT id, app_key, version_key, has_record, finished, sort_time, record_bytes, line_count, line_bytes
        FROM requests INDEXED BY requests_by_time
        WHERE app_key = ? AND sort_time < ? ORDER BY sort_time LIMIT ?`)
      .safeIntegers(true),
    deleteLines: db.prepare("DELETE FROM lines WHERE request_key = ?"),
    deleteMoves: db.prepare("DELETE FROM moves WHERE request_key = ?"),
    deleteRequest: db.prepare("DELETE FROM requests WHERE id = ?"),
    markSeq: db.prepare("INSERT OR REPLACE INTO seq_marks (time, seq) VALUES (?, ?)"),
    markBefore: db.prepare("SELECT seq FROM seq_marks WHERE time <= ? ORDER BY time DESC LIMIT 1").pluck().safeIntegers(true),
    pruneMarks: db.prepare("DELETE FROM seq_marks WHERE time < ?"),
    pruneMoves: db.prepare("DELETE FROM moves WHERE seq <= ?"),
    setMovesFloor: db.prepare("UPDATE meta SET value = max(value, ?) WHERE key = 'moves_floor'"),
  };

  function appKey(appId: string): number {
    let key = appKeys.get(appId);
    if (key === undefined) {
      key = (stmt.appKey.get(appId) as number | undefined) ?? Number(stmt.insertApp.run(appId).lastInsertRowid);
      appKeys.set(appId, key);
    }
    return key;
  }

  function versionKey(app: number, moduleId: string, versionId: string): number {
    const name = `${app}\u0000${moduleId}\u0000${versionId}`;
    let key = versionKeys.get(name);
    if (key === undefined) {
      key =
        (stmt.versionKey.get(app, moduleId, versionId) as number | undefined) ??
        Number(stmt.insertVersion.run(app, moduleId, versionId).lastInsertRowid);
      versionKeys.set(name, key);
    }
    return key;
  }

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

  interface LineTotals {
    max_level: number | null;
    line_count: number;
    line_bytes: number;
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

  // Every change to a request row takes the next sequence number (kept in
  // meta within the same transaction), so Tail and paged Reads can tell what
  // changed after a point. Numbers used by a rolled-back write are skipped.
  let seq = stmt.lastSeq.get() as bigint;
  function nextSeq(): bigint {
    seq += 1n;
    return seq;
  }

  /** Runs a write in the group commit, recording the last sequence number it used. */
  function change<T>(work: () => T): Promise<T> {
    return guard(
      batcher.run(() => {
        try {
          const result = work();
          rollups.flush();
          stmt.saveSeq.run(seq);
          return result;
        } catch (err) {
          rollups.discard();
          forgetKeys();
          throw err;
        }
      }),
    );
  }

  /** Moves a row to a new sort time, remembering where it stood for paged Reads. */
  function noteMove(existing: ExistingRow, sortTime: bigint, changeSeq: bigint): void {
    if (existing.sort_time !== sortTime) stmt.insertMove.run(existing.id, changeSeq, existing.sort_time);
  }

  function writeRecord(record: PreparedRecord, at: bigint): number {
    const log = record.log;
    const app = appKey(log.appId);
    const requestId = toSql(RequestLogSchema.field.requestId, log.requestId);
    const existing = stmt.requestByKey.get(app, requestId) as ExistingRow | undefined;
    if (existing && existing.has_record === 1n && existing.finished === 1n && !log.finished) {
      // A finished record is never turned back into an in-progress one by a
      // late or retried in-progress write; its lines are still kept.
      return flushInto(existing, record.lines, at, log.startTime);
    }
    const changeSeq = nextSeq();
    const sortTime = log.finished ? log.endTime : at;
    const versionKeyOf = versionKey(app, log.moduleId, log.versionId);
    const recordBytes = recordWireBytes(log);
    const values: unknown[] = [
      app,
      versionKeyOf,
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
      noteMove(existing, sortTime, changeSeq);
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
      version_key: BigInt(versionKeyOf),
      sort_time: sortTime,
      has_record: 1n,
      record_bytes: BigInt(recordBytes),
      line_count: (existing?.line_count ?? 0n) + BigInt(added),
      line_bytes: (existing?.line_bytes ?? 0n) + BigInt(bytes),
    }));
    return added;
  }

  /** Adds lines to an existing row: a change (new seq); an in-progress row moves to now. */
  function flushInto(existing: ExistingRow, lines: readonly AppLine[], at: bigint, first: bigint): number {
    if (lines.length === 0) return 0;
    const changeSeq = nextSeq();
    const sortTime = existing.finished === 1n ? existing.sort_time : at;
    noteMove(existing, sortTime, changeSeq);
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

  function flushLines(request: RequestContext, lines: readonly AppLine[], at: bigint): number {
    if (lines.length === 0) return 0;
    const app = appKey(request.appId);
    const requestId = toSql(RequestLogSchema.field.requestId, request.requestId);
    const first = lines.reduce((min, l) => (l.time < min ? l.time : min), lines[0]!.time);
    const existing = stmt.requestByKey.get(app, requestId) as ExistingRow | undefined;
    if (existing) return flushInto(existing, lines, at, first);
    const version = versionKey(app, request.moduleId, request.versionId);
    const seqOfStub = nextSeq();
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
  }

  function guard<T>(work: Promise<T>): Promise<T> {
    return work.catch((err: unknown) => {
      throw storageError(err);
    });
  }

  return {
    write(records) {
      return change((): WriteResult => {
        const at = now();
        let lines = 0;
        for (const record of records) lines += writeRecord(record, at);
        return { records: records.length, lines };
      });
    },

    ingest(records, flushes) {
      return change((): WriteResult => {
        const at = now();
        let lines = 0;
        for (const record of records) lines += writeRecord(record, at);
        for (const f of flushes) lines += flushLines(f.request, f.lines, at);
        return { records: records.length, lines };
      });
    },

    flush(request, lines) {
      return change(() => flushLines(request, lines, now()));
    },

    setStatus(instance: InstanceKey, status: string) {
      return guard(
        batcher.run(() => {
          stmt.setStatus.run(
            instance.appId,
            instance.moduleId,
            instance.versionId,
            instance.instanceId,
            status,
            now(),
          );
        }),
      );
    },

    listStatus(filter: StatusFilter): InstanceStatus[] {
      try {
        const rows = stmt.listStatus.all({
          app: filter.appId,
          module: filter.moduleId ?? null,
          version: filter.versionId ?? null,
        }) as Row[];
        return rows.map((r) =>
          create(InstanceStatusSchema, {
            appId: r.app_id as string,
            moduleId: r.module_id as string,
            versionId: r.version_id as string,
            instanceId: r.instance_id as string,
            status: r.status as string,
            time: r.time as bigint,
          }),
        );
      } catch (err) {
        throw storageError(err);
      }
    },

    async read(plan) {
      try {
        return pool ? await pool.read(plan) : reader.read(plan);
      } catch (err) {
        throw storageError(err);
      }
    },

    getRequests(appId, requestIds) {
      try {
        return reader.getRequests(appId, requestIds);
      } catch (err) {
        throw storageError(err);
      }
    },

    usage(plan) {
      try {
        return usage(plan);
      } catch (err) {
        throw storageError(err);
      }
    },

    changes(plan, afterSeq, limit) {
      try {
        return reader.changes(plan, afterSeq, limit);
      } catch (err) {
        throw storageError(err);
      }
    },

    currentSeq() {
      return reader.currentSeq();
    },

    onCommit(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },

    offsetKey() {
      return new Uint8Array(stmt.offsetKey.get() as Buffer);
    },

    expire(cutoff, limit) {
      return change(() => {
        let deleted = 0;
        for (const app of stmt.apps.all() as number[]) {
          for (const row of stmt.expiring.all(app, cutoff, limit - deleted) as ExistingRow[]) {
            stmt.deleteLines.run(row.id);
            stmt.deleteMoves.run(row.id);
            stmt.deleteRequest.run(row.id);
            rollups.move(shareOf(row), undefined);
            deleted++;
          }
          if (deleted >= limit) break;
        }
        return deleted;
      });
    },

    async compact(historyCutoff, pages) {
      await change(() => {
        stmt.markSeq.run(now(), seq);
        const floor = stmt.markBefore.get(historyCutoff) as bigint | undefined;
        if (floor !== undefined) {
          stmt.pruneMoves.run(floor);
          stmt.setMovesFloor.run(floor);
          stmt.pruneMarks.run(historyCutoff);
        }
      });
      try {
        db.pragma(`incremental_vacuum(${Math.max(0, Math.floor(pages))})`);
      } catch (err) {
        throw storageError(err);
      }
    },

    async close() {
      batcher.drain();
      await pool?.close();
      db.close();
    },
  };
}

import { create, isFieldSet } from "@bufbuild/protobuf";
import type Database from "better-sqlite3";
import { type LogLine, LogLineSchema, type RequestLog, RequestLogSchema } from "../../../gen/reqlog/v1/log_service_pb.js";
import { formatCombined, withExtras } from "../../format/combined-line.js";
import type { Cursor } from "../../query/offset-codec.js";
import type { ReadPlan } from "../../query/read-plan.js";
import type { ReadResult } from "../store.js";
import { rowToRequestLog, toSql } from "./record-columns.js";

type Row = Record<string, unknown>;

const recordSelect = `
  SELECT r.*, a.app_id, v.module_id, v.version_id FROM requests r
  JOIN versions v ON v.id = r.version_key JOIN apps a ON a.id = r.app_key`;

/** How often (in rows) a scan looks at the clock. */
const clockEvery = 64;

/**
 * The read side of the SQLite store: request records by id, and the
 * newest-first keyset scan of Read. Reads run on the same connection as
 * writes; WAL keeps them from blocking each other at the database level and
 * the scan budget keeps one Read from holding the event loop for long.
 */
export function createSqliteReader(db: Database.Database) {
  const stmt = {
    appKey: db.prepare("SELECT id FROM apps WHERE app_id = ?").pluck(),
    recordById: db.prepare(`${recordSelect} WHERE r.app_key = ? AND r.request_id = ?`).safeIntegers(true),
    linesOf: db
      .prepare("SELECT time, level, message FROM lines WHERE request_key = ? ORDER BY time, pos")
      .safeIntegers(true),
    lastLinesOf: db
      .prepare("SELECT time, level, message FROM lines WHERE request_key = ? ORDER BY time DESC, pos DESC LIMIT ?")
      .safeIntegers(true),
    versionKeys: db.prepare("SELECT id FROM versions WHERE app_key = ? AND module_id = ?").pluck(),
    versionKey: db.prepare("SELECT id FROM versions WHERE app_key = ? AND module_id = ? AND version_id = ?").pluck(),
    currentSeq: db.prepare("SELECT value FROM meta WHERE key = 'seq'").pluck().safeIntegers(true),
  };
  const scans = new Map<string, Database.Statement>();
  const currentSeq = () => stmt.currentSeq.get() as bigint;

  function linesOf(requestKey: bigint, perRequest?: number): { lines: LogLine[]; truncated: boolean } {
    const rows = (
      perRequest === undefined ? stmt.linesOf.all(requestKey) : stmt.lastLinesOf.all(requestKey, perRequest + 1)
    ) as Row[];
    const truncated = perRequest !== undefined && rows.length > perRequest;
    if (perRequest !== undefined) {
      // lastLinesOf returns newest first: keep the newest N, in time order.
      rows.splice(perRequest);
      rows.reverse();
    }
    const lines = rows.map((l) =>
      create(LogLineSchema, { time: l.time as bigint, level: Number(l.level), logMessage: l.message as string }),
    );
    return { lines, truncated };
  }

  function recordRows(app: number, requestIds: readonly Uint8Array[]): Row[] {
    const seen = new Set<string>();
    const rows: Row[] = [];
    for (const requestId of requestIds) {
      const key = Buffer.from(requestId).toString("hex");
      if (seen.has(key)) continue;
      seen.add(key);
      const row = stmt.recordById.get(app, toSql(RequestLogSchema.field.requestId, requestId)) as Row | undefined;
      if (row) rows.push(row);
    }
    return rows;
  }

  /** The version keys a plan's module/version pairs name (undefined: no version filter). */
  function versionKeys(app: number, plan: ReadPlan): number[] | undefined {
    if (!plan.versions) return undefined;
    const keys = new Set<number>();
    for (const v of plan.versions) {
      if (v.versionId === undefined) {
        for (const k of stmt.versionKeys.all(app, v.moduleId) as number[]) keys.add(k);
      } else {
        const k = stmt.versionKey.get(app, v.moduleId, v.versionId) as number | undefined;
        if (k !== undefined) keys.add(k);
      }
    }
    return [...keys];
  }

  function cached(sql: string): Database.Statement {
    let statement = scans.get(sql);
    if (!statement) {
      statement = db.prepare(sql).safeIntegers(true);
      if (scans.size > 256) scans.clear();
      scans.set(sql, statement);
    }
    return statement;
  }

  /** Filters on the record's current values that SQL applies. */
  function valueFilters(plan: ReadPlan, versions: number[] | undefined): string[] {
    const where = ["r.app_key = @app"];
    if (!plan.includeIncomplete) where.push("r.finished = 1");
    if (versions) where.push(`r.version_key IN (${versions.map((k) => Number(k)).join(", ")})`);
    if (plan.minimumLogLevel !== undefined) where.push("r.max_level >= @level");
    if (plan.replicaIndex !== undefined) where.push("coalesce(r.replica_index, -1) = @replica");
    return where;
  }

  /**
   * Records unchanged since the snapshot, newest first by sort time: their
   * sort time now is where they stood then. The keyset bound and time range
   * go to SQL, so the scan starts right after the cursor on the index.
   */
  function unchangedScan(plan: ReadPlan, versions: number[] | undefined): Database.Statement {
    const where = [...valueFilters(plan, versions), "r.seq <= @snapshot"];
    if (plan.startTime !== undefined) where.push("r.sort_time >= @start");
    if (plan.endTime !== undefined) where.push("r.sort_time < @end");
    if (plan.after) {
      // The redundant `<=` lets SQLite use the index range; the OR is the exact keyset bound.
      where.push("r.sort_time <= @afterTime AND (r.sort_time < @afterTime OR r.id < @afterId)");
    }
    return cached(
      `SELECT r.*, a.app_id, v.module_id, v.version_id, r.sort_time AS key_time FROM requests r
       JOIN versions v ON v.id = r.version_key JOIN apps a ON a.id = r.app_key
       WHERE ${where.join(" AND ")} ORDER BY r.sort_time DESC, r.id DESC`,
    );
  }

  /**
   * Records that existed at the snapshot and changed since, each with the sort
   * time it had then (its first move after the snapshot, else its sort time).
   */
  function changedScan(plan: ReadPlan, versions: number[] | undefined): Database.Statement {
    const where = [...valueFilters(plan, versions), "r.seq > @snapshot", "r.created_seq <= @snapshot"];
    return cached(
      `SELECT r.*, a.app_id, v.module_id, v.version_id, coalesce(
         (SELECT m.old_sort_time FROM moves m WHERE m.request_key = r.id AND m.seq > @snapshot
          ORDER BY m.seq LIMIT 1), r.sort_time) AS key_time
       FROM requests r JOIN versions v ON v.id = r.version_key JOIN apps a ON a.id = r.app_key
       WHERE ${where.join(" AND ")}`,
    );
  }

  /** The filters only JS can apply: RE2 on combined and host. */
  function matchesRegexes(row: Row, plan: ReadPlan): boolean {
    if (plan.hostRegex && !plan.hostRegex.test((row.host as string | null) ?? "")) return false;
    if (plan.combinedRegex) {
      const combined = (row.combined as string | null) ?? formatCombined(rowToRequestLog(row));
      if (!plan.combinedRegex.test(combined)) return false;
    }
    return true;
  }

  function toLog(row: Row, plan: ReadPlan): RequestLog {
    const log = rowToRequestLog(row);
    if (plan.appLogs) {
      const { lines, truncated } = linesOf(row.id as bigint, plan.appLogs.perRequest);
      log.line = lines;
      if (truncated) log.linesIncomplete = true;
    }
    log.combined = withExtras(log.combined, log, plan.combinedExtras, (field) =>
      isFieldSet(log, RequestLogSchema.field[field]),
    );
    return log;
  }

  const newerFirst = (a: Row, b: Row): number => {
    const ka = a.key_time as bigint;
    const kb = b.key_time as bigint;
    if (ka !== kb) return ka > kb ? -1 : 1;
    return (a.id as bigint) > (b.id as bigint) ? -1 : 1;
  };

  function passesFilters(row: Row, plan: ReadPlan): boolean {
    return (
      (plan.includeIncomplete || row.finished === 1n) &&
      (plan.minimumLogLevel === undefined ||
        (row.max_level !== null && (row.max_level as bigint) >= BigInt(plan.minimumLogLevel))) &&
      (plan.replicaIndex === undefined || Number(row.replica_index ?? -1n) === plan.replicaIndex) &&
      matchesRegexes(row, plan)
    );
  }

  /** The keyset scan of one page: unchanged and changed records merged in snapshot order. */
  function* scan(app: number, plan: ReadPlan, versions: number[] | undefined, snapshot: bigint): Generator<Row> {
    const params = Object.fromEntries(
      Object.entries({
        app,
        snapshot,
        start: plan.startTime,
        end: plan.endTime,
        afterTime: plan.after?.sortTime,
        afterId: plan.after?.id,
        level: plan.minimumLogLevel,
        replica: plan.replicaIndex,
      }).filter(([, v]) => v !== undefined),
    );
    let changed: Row[] = [];
    if (snapshot < currentSeq()) {
      const after = plan.after;
      const { start: _s, end: _e, afterTime: _t, afterId: _i, ...changedParams } = params;
      changed = (changedScan(plan, versions).all(changedParams) as Row[])
        .filter((row) => {
          const key = row.key_time as bigint;
          return (
            (plan.startTime === undefined || key >= plan.startTime) &&
            (plan.endTime === undefined || key < plan.endTime) &&
            (!after || key < after.sortTime || (key === after.sortTime && (row.id as bigint) < after.id))
          );
        })
        .sort(newerFirst);
    }
    let next = 0;
    for (const row of unchangedScan(plan, versions).iterate(params) as IterableIterator<Row>) {
      while (next < changed.length && newerFirst(changed[next]!, row) < 0) yield changed[next++]!;
      yield row;
    }
    while (next < changed.length) yield changed[next++]!;
  }

  function read(plan: ReadPlan): ReadResult {
    const app = stmt.appKey.get(plan.appId) as number | undefined;
    const snapshot = plan.after?.snapshot ?? currentSeq();
    const cursorOf = (row: Row): Cursor => ({ snapshot, sortTime: row.key_time as bigint, id: row.id as bigint });
    if (app === undefined) return { records: [] };
    if (plan.requestIds) {
      const versions = versionKeys(app, plan);
      const rows = recordRows(app, plan.requestIds).filter(
        (row) => (!versions || versions.includes(Number(row.version_key))) && passesFilters(row, plan),
      );
      return {
        records: rows.map((row) => ({ log: toLog(row, plan), cursor: cursorOf({ ...row, key_time: row.sort_time }) })),
      };
    }
    const versions = versionKeys(app, plan);
    if (versions && versions.length === 0) return { records: [] };

    const started = performance.now();
    const matched: Row[] = [];
    let examined = 0;
    let lastExamined: Row | undefined;
    let next: Cursor | undefined;
    for (const row of scan(app, plan, versions, snapshot)) {
      examined++;
      lastExamined = row;
      // SQL applied the value filters to both streams; RE2 is left.
      if (matchesRegexes(row, plan)) {
        if (matched.length === plan.count) {
          // One more match exists: the page is full and more remain.
          next = cursorOf(matched[matched.length - 1]!);
          break;
        }
        matched.push(row);
      }
      if (examined >= plan.budget.rows || (examined % clockEvery === 0 && performance.now() - started > plan.budget.ms)) {
        // Budget spent: continue after the last row examined, which may be
        // past the last match (the rows between did not match).
        next = cursorOf(row);
        break;
      }
    }
    return {
      records: matched.map((row) => ({ log: toLog(row, plan), cursor: cursorOf(row) })),
      next,
      lastSortTime: lastExamined ? (lastExamined.key_time as bigint) : undefined,
    };
  }

  /** Changed records (see Store.changes), by the (app_key, seq) index. */
  function changes(plan: ReadPlan, afterSeq: bigint, limit: number) {
    const app = stmt.appKey.get(plan.appId) as number | undefined;
    const upTo = currentSeq();
    if (app === undefined) return { records: [], lastSeq: upTo };
    const versions = versionKeys(app, plan);
    if (versions && versions.length === 0) return { records: [], lastSeq: upTo };
    const where = [...valueFilters(plan, versions), "r.seq > @after"];
    if (plan.startTime !== undefined) where.push("r.sort_time >= @start");
    if (plan.endTime !== undefined) where.push("r.sort_time < @end");
    const rows = cached(
      `SELECT r.*, a.app_id, v.module_id, v.version_id FROM requests r
       JOIN versions v ON v.id = r.version_key JOIN apps a ON a.id = r.app_key
       WHERE ${where.join(" AND ")} ORDER BY r.seq LIMIT @limit`,
    ).all(
      Object.fromEntries(
        Object.entries({
          app,
          after: afterSeq,
          limit,
          start: plan.startTime,
          end: plan.endTime,
          level: plan.minimumLogLevel,
          replica: plan.replicaIndex,
        }).filter(([, v]) => v !== undefined),
      ),
    ) as Row[];
    // A full batch may have more behind it; otherwise everything up to now was examined.
    const lastSeq = rows.length === limit ? (rows[rows.length - 1]!.seq as bigint) : upTo;
    return {
      records: rows.filter((row) => matchesRegexes(row, plan)).map((row) => toLog(row, plan)),
      lastSeq,
    };
  }

  return {
    read,
    changes,
    currentSeq,
    /** Stored records of these ids (those that exist), in the order given, once each, with all their lines. */
    getRequests(appId: string, requestIds: readonly Uint8Array[]): RequestLog[] {
      const app = stmt.appKey.get(appId) as number | undefined;
      if (app === undefined) return [];
      return recordRows(app, requestIds).map((row) => {
        const log = rowToRequestLog(row);
        log.line = linesOf(row.id as bigint).lines;
        return log;
      });
    },
  };
}

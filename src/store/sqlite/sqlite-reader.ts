import { create, isFieldSet } from "@bufbuild/protobuf";
import type Database from "better-sqlite3";
import { type LogLine, LogLineSchema, type RequestLog, RequestLogSchema } from "../../../gen/reqlog/v1/log_service_pb.js";
import { withExtras } from "../../format/combined-line.js";
import type { Cursor } from "../../query/offset-codec.js";
import type { ReadPlan } from "../../query/read-plan.js";
import type { ReadResult } from "../store.js";
import type RE2 from "re2";
import { ReqlogError } from "../../reqlog-error.js";
import { combinedPrefilterSql, combinedSql } from "./combined-sql.js";
import { requiredLiterals } from "../../query/regex-literals.js";
import { rowToRequestLog, toSql } from "./record-columns.js";

type Row = Record<string, unknown>;

/** Named parameters for a statement built for this plan: the ones it uses are the defined ones. */
function definedParams(params: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(params).filter(([, v]) => v !== undefined));
}

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
    movesFloor: db.prepare("SELECT value FROM meta WHERE key = 'moves_floor'").pluck().safeIntegers(true),
  };
  const scans = new Map<string, Database.Statement>();
  const currentSeq = () => stmt.currentSeq.get() as bigint;

  // The scan budget and RE2 patterns of the statement running now (one at a
  // time: better-sqlite3 is synchronous), read by the SQL functions below.
  const budget = {
    examined: 0,
    maxRows: Number.POSITIVE_INFINITY,
    deadline: Number.POSITIVE_INFINITY,
    spent: false,
    combined: undefined as RE2 | undefined,
    host: undefined as RE2 | undefined,
  };
  function armBudget(plan: ReadPlan): void {
    Object.assign(budget, {
      examined: 0,
      maxRows: plan.budget.rows,
      deadline: performance.now() + plan.budget.ms,
      spent: false,
      combined: plan.combinedRegex,
      host: plan.hostRegex,
    });
  }
  function disarmBudget(): void {
    Object.assign(budget, { combined: undefined, host: undefined, maxRows: Number.POSITIVE_INFINITY, deadline: Number.POSITIVE_INFINITY });
  }
  db.function("reqlog_spent", () => {
    budget.examined++;
    if (
      !budget.spent &&
      // The row past the budget is the one let through (and checked in JS).
      (budget.examined > budget.maxRows || (budget.examined % clockEvery === 0 && performance.now() > budget.deadline))
    ) {
      budget.spent = true;
    }
    return budget.spent ? 1 : 0;
  });
  db.function("reqlog_combined_match", (line: unknown) =>
    Buffer.isBuffer(line) && budget.combined?.test(line) ? 1 : 0,
  );
  db.function("reqlog_host_match", (host: unknown) => (Buffer.isBuffer(host) && budget.host?.test(host) ? 1 : 0));

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

  /**
   * Filters on the record's current values, RE2 patterns included: they run
   * inside SQLite through the reqlog_*_match functions, on the combined line
   * (stored, or derived in SQL) and the host as bytes, so no row is turned
   * into JS strings or messages just to be tested and dropped. Measured on
   * forge traffic (docs/benchmarks.md), this beat scanning the lines as
   * Buffers or strings in JS.
   */
  function filterSql(plan: ReadPlan, versions: number[] | undefined): string[] {
    const where: string[] = [];
    if (!plan.includeIncomplete) where.push("r.finished = 1");
    if (versions) where.push(`r.version_key IN (${versions.map((k) => Number(k)).join(", ")})`);
    if (plan.minimumLogLevel !== undefined) where.push("r.max_level >= @level");
    if (plan.replicaIndex !== undefined) where.push("coalesce(r.replica_index, -1) = @replica");
    if (plan.hostRegex) where.push("reqlog_host_match(CAST(coalesce(r.host, '') AS BLOB))");
    if (plan.combinedRegex) {
      const prefilter = combinedPrefilterSql(requiredLiterals(plan.combinedRegex.source));
      if (prefilter) where.push(prefilter);
      where.push(`reqlog_combined_match(CAST(${combinedSql} AS BLOB))`);
    }
    return where.length > 0 ? where : ["1"];
  }

  /**
   * Records unchanged since the snapshot, newest first by sort time: their
   * sort time now is where they stood then. The keyset bound and time range
   * go to SQL, so the scan starts right after the cursor on the index.
   */
  function unchangedScan(plan: ReadPlan, versions: number[] | undefined): Database.Statement {
    const where = ["r.app_key = @app", "r.seq <= @snapshot"];
    if (plan.startTime !== undefined) where.push("r.sort_time >= @start");
    // One inclusive upper bound (the lower of end_time − 1 and the cursor):
    // given two, SQLite seeks on one and filters by the other, and a deep
    // page would start its scan at the top of the range.
    if (plan.endTime !== undefined || plan.after) where.push("r.sort_time <= @upper");
    // The exact keyset bound within the cursor's own sort time.
    if (plan.after) where.push("(r.sort_time < @afterTime OR r.id < @afterId)");
    // reqlog_spent() sees every row the index range yields, before the other
    // filters: once the budget is spent it lets that row through, so the
    // scan stops there even when no row matches.
    where.push(`(reqlog_spent() OR (${filterSql(plan, versions).join(" AND ")}))`);
    // INDEXED BY: walking the (app, sort time, id) index backwards is what
    // makes a page cost the same at any depth and lets the budget stop the
    // scan; left alone, the planner may pick the seq or version index and
    // sort every row in the range first.
    return cached(
      `SELECT r.*, a.app_id, v.module_id, v.version_id, r.sort_time AS key_time
       FROM requests r INDEXED BY requests_by_time
       JOIN versions v ON v.id = r.version_key JOIN apps a ON a.id = r.app_key
       WHERE ${where.join(" AND ")} ORDER BY r.sort_time DESC, r.id DESC`,
    );
  }

  /**
   * Records that existed at the snapshot and changed since, each with the sort
   * time it had then (its first move after the snapshot, else its sort time).
   */
  function changedScan(plan: ReadPlan, versions: number[] | undefined): Database.Statement {
    const where = ["r.app_key = @app", "r.seq > @snapshot", "r.created_seq <= @snapshot", ...filterSql(plan, versions)];
    return cached(
      `SELECT r.*, a.app_id, v.module_id, v.version_id, coalesce(
         (SELECT m.old_sort_time FROM moves m WHERE m.request_key = r.id AND m.seq > @snapshot
          ORDER BY m.seq LIMIT 1), r.sort_time) AS key_time
       FROM requests r JOIN versions v ON v.id = r.version_key JOIN apps a ON a.id = r.app_key
       WHERE ${where.join(" AND ")}`,
    );
  }

  /**
   * Whether one row passes the plan's filters: the same SQL as the scans,
   * for rows that reach JS unfiltered (request-id mode, the row a spent
   * budget let through). Needs the plan's patterns armed.
   */
  function passesFilters(id: bigint, plan: ReadPlan, versions: number[] | undefined): boolean {
    const statement = cached(`SELECT 1 FROM requests r WHERE r.id = @id AND ${filterSql(plan, versions).join(" AND ")}`);
    return statement.get(definedParams({ id, level: plan.minimumLogLevel, replica: plan.replicaIndex })) !== undefined;
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

  /** The highest sort time a page may return (inclusive), or undefined. */
  function upperBound(plan: ReadPlan): bigint | undefined {
    const end = plan.endTime !== undefined ? plan.endTime - 1n : undefined;
    const after = plan.after?.sortTime;
    if (end === undefined) return after;
    return after === undefined || end < after ? end : after;
  }

  /** The keyset scan of one page: unchanged and changed records merged in snapshot order. */
  function* scan(app: number, plan: ReadPlan, versions: number[] | undefined, snapshot: bigint): Generator<Row> {
    const params = definedParams({
      app,
      snapshot,
      start: plan.startTime,
      upper: upperBound(plan),
      afterTime: plan.after?.sortTime,
      afterId: plan.after?.id,
      level: plan.minimumLogLevel,
      replica: plan.replicaIndex,
    });
    let changed: Row[] = [];
    if (snapshot < currentSeq()) {
      const after = plan.after;
      const { start: _s, upper: _u, afterTime: _t, afterId: _i, ...changedParams } = params;
      changed = (changedScan(plan, versions).all(changedParams) as Row[])
        .filter((row) => {
          const key = row.key_time as bigint;
          return (
            (plan.startTime === undefined || key >= plan.startTime) &&
            (plan.endTime === undefined || key < plan.endTime) &&
            (!after || key < after.sortTime || (key === after.sortTime && (row.id as bigint) < after.id))
          );
        })
        .sort(newerFirst)
        .map((row) => ({ ...row, changed: true }));
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
    if (plan.after && plan.after.snapshot < (stmt.movesFloor.get() as bigint)) {
      throw ReqlogError.invalid("offset expired: it is over 24 hours old; start the read again without it");
    }
    if (app === undefined) return { records: [] };
    const versions = versionKeys(app, plan);
    armBudget(plan);
    try {
      if (plan.requestIds) {
        const rows = recordRows(app, plan.requestIds).filter((row) => passesFilters(row.id as bigint, plan, versions));
        return {
          records: rows.map((row) => ({ log: toLog(row, plan), cursor: cursorOf({ ...row, key_time: row.sort_time }) })),
        };
      }
      if (versions && versions.length === 0) return { records: [] };
      return page(app, plan, versions, snapshot, cursorOf);
    } finally {
      disarmBudget();
    }
  }

  function page(
    app: number,
    plan: ReadPlan,
    versions: number[] | undefined,
    snapshot: bigint,
    cursorOf: (row: Row) => Cursor,
  ): ReadResult {
    const matched: Row[] = [];
    let last: Row | undefined;
    let next: Cursor | undefined;
    let unfiltered: Row | undefined;
    for (const row of scan(app, plan, versions, snapshot)) {
      last = row;
      if (budget.spent && row.changed === undefined) {
        // The budget let this row through unfiltered; it is checked once the
        // scan is closed (a statement cannot run beside an open iterator).
        unfiltered = row;
        break;
      }
      if (matched.length === plan.count) {
        // One more match exists: the page is full and more remain.
        next = cursorOf(matched[matched.length - 1]!);
        break;
      }
      matched.push(row);
    }
    if (unfiltered) {
      const matches = passesFilters(unfiltered.id as bigint, plan, versions);
      if (matches && matched.length === plan.count) {
        next = cursorOf(matched[matched.length - 1]!);
      } else {
        if (matches) matched.push(unfiltered);
        // Continue after this row; the rows before it that were not
        // returned did not match.
        next = cursorOf(unfiltered);
      }
    }
    return {
      records: matched.map((row) => ({ log: toLog(row, plan), cursor: cursorOf(row) })),
      next,
      lastSortTime: last ? (last.key_time as bigint) : undefined,
    };
  }

  /** Changed records (see Store.changes), by the (app_key, seq) index. */
  function changes(plan: ReadPlan, afterSeq: bigint, limit: number) {
    armBudget(plan);
    try {
      return changesArmed(plan, afterSeq, limit);
    } finally {
      disarmBudget();
    }
  }

  function changesArmed(plan: ReadPlan, afterSeq: bigint, limit: number) {
    const app = stmt.appKey.get(plan.appId) as number | undefined;
    const upTo = currentSeq();
    if (app === undefined) return { records: [], lastSeq: upTo };
    const versions = versionKeys(app, plan);
    if (versions && versions.length === 0) return { records: [], lastSeq: upTo };
    const where = ["r.app_key = @app", "r.seq > @after", ...filterSql(plan, versions)];
    if (plan.startTime !== undefined) where.push("r.sort_time >= @start");
    if (plan.endTime !== undefined) where.push("r.sort_time < @end");
    const rows = cached(
      `SELECT r.*, a.app_id, v.module_id, v.version_id FROM requests r
       JOIN versions v ON v.id = r.version_key JOIN apps a ON a.id = r.app_key
       WHERE ${where.join(" AND ")} ORDER BY r.seq LIMIT @limit`,
    ).all(
      definedParams({
        app,
        after: afterSeq,
        limit,
        start: plan.startTime,
        end: plan.endTime,
        level: plan.minimumLogLevel,
        replica: plan.replicaIndex,
      }),
    ) as Row[];
    // A full batch may have more behind it; otherwise everything up to now was examined.
    const lastSeq = rows.length === limit ? (rows[rows.length - 1]!.seq as bigint) : upTo;
    return {
      records: rows.map((row) => toLog(row, plan)),
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

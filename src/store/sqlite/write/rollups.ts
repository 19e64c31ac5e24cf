import type Database from "better-sqlite3";
import { statsFactsOf } from "../../../write/stats-facts.js";
import { storedRowSql } from "../rows/sql.js";
import { createStatsRollups, type StatsRollups, type StatsShare } from "../stats/stats-rollups.js";

const usecPerHour = 3_600_000_000n;

/** Hours since the epoch of a time in µs. */
export function hourOf(usec: bigint): number {
  return Number(usec >= 0n ? usec / usecPerHour : (usec - usecPerHour + 1n) / usecPerHour);
}

/** What one requests row adds to the usage rollups. */
export interface UsageShare {
  appKey: number;
  versionKey: number;
  hour: number;
  /** 1 once the request's record has arrived (lines alone are not a record). */
  requests: number;
  bytes: number;
  lines: number;
}

/** The columns that decide a row's share of the usage rollups (read with safeIntegers). */
interface RowUsage {
  app_key: bigint;
  version_key: bigint;
  sort_time: bigint;
  has_record: bigint;
  record_bytes: bigint;
  line_count: bigint;
  line_bytes: bigint;
}

/** The columns that decide a row's share of the stats rollups (read with safeIntegers). */
interface RowStats {
  has_record: bigint;
  finished: bigint;
  url_map_entry: string;
  resource: string;
  status: bigint;
  latency: bigint;
  response_size: bigint;
  ip: string;
  user_agent: string | null;
}

/** A stored row as a write or retention reads it (the columns of sql.ts storedRowSql). */
export interface StoredRow extends RowUsage, RowStats {
  id: bigint;
}

export function shareOf(row: RowUsage): UsageShare {
  return {
    appKey: Number(row.app_key),
    versionKey: Number(row.version_key),
    hour: hourOf(row.sort_time),
    requests: Number(row.has_record),
    bytes: Number(row.record_bytes + row.line_bytes),
    lines: Number(row.line_count),
  };
}

/** A stored row's share of the stats rollups: only a finished request's record counts. */
export function statsShareOf(row: RowUsage & RowStats): StatsShare | undefined {
  if (row.has_record !== 1n || row.finished !== 1n) return undefined;
  const facts = statsFactsOf({
    urlMapEntry: row.url_map_entry,
    resource: row.resource,
    status: Number(row.status),
    latency: row.latency,
    responseSize: row.response_size,
    ip: row.ip,
    userAgent: row.user_agent,
  });
  return { appKey: Number(row.app_key), versionKey: Number(row.version_key), hour: hourOf(row.sort_time), facts };
}

/** Where the moves of the writes kept so far end: a write that fails is cut back to it (`cutBack`). */
export interface RollupsMark {
  usage: number;
  stats: number;
}

/**
 * Keeps usage_hourly (and, through stats-rollups.ts, the stats rollups)
 * equal to a recount of the rows: every change to a row takes its old share
 * out and puts its new share in. The moves of a whole group commit (every
 * write in it that succeeded) are summed per (app, hour, version) and per
 * stats cell, and applied by `flush` just before the group's COMMIT, so the
 * thousands of requests of one hour that a group of calls stores cost one
 * upsert per cell, not one per call. A write that fails is rolled back to
 * its savepoint and its moves cut off (`mark`, `cutBack`).
 */
export function createRollups(db: Database.Database): Rollups {
  const add = db.prepare(`
    INSERT INTO usage_hourly (app_key, hour, version_key, requests, bytes, lines) VALUES (?, ?, ?, ?, ?, ?)
    ON CONFLICT (app_key, hour, version_key) DO UPDATE SET
      requests = requests + excluded.requests, bytes = bytes + excluded.bytes, lines = lines + excluded.lines`);
  const dropEmpty = db.prepare(
    "DELETE FROM usage_hourly WHERE app_key = ? AND hour = ? AND version_key = ? AND requests = 0 AND lines = 0 AND bytes = 0",
  );
  const pending = new Map<string, UsageShare>();
  /** The group's moves not yet applied, before and after, in pairs. */
  const usageMoves: (UsageShare | undefined)[] = [];
  const statsMoves: (StatsShare | undefined)[] = [];
  const stats = createStatsRollups(db);
  backfillStats(db, stats);

  function accumulate(share: UsageShare, sign: 1 | -1): void {
    const key = `${share.appKey}/${share.hour}/${share.versionKey}`;
    const sum = pending.get(key) ?? { ...share, requests: 0, bytes: 0, lines: 0 };
    sum.requests += sign * share.requests;
    sum.bytes += sign * share.bytes;
    sum.lines += sign * share.lines;
    pending.set(key, sum);
  }

  return {
    /** Moves a row's share from `before` (absent for a new row) to `after` (absent for a deleted row). */
    move(before: UsageShare | undefined, after: UsageShare | undefined): void {
      usageMoves.push(before, after);
    },
    /** Moves a request's share of the stats rollups (stats-rollups.ts), the same way. */
    moveStats(before: StatsShare | undefined, after: StatsShare | undefined): void {
      statsMoves.push(before, after);
    },
    /** Where the moves so far end (taken as a write starts). */
    mark(): RollupsMark {
      return { usage: usageMoves.length, stats: statsMoves.length };
    },
    /** Forgets the moves after `mark`: those of a write that failed (its savepoint rolled back). */
    cutBack(mark: RollupsMark): void {
      usageMoves.length = mark.usage;
      statsMoves.length = mark.stats;
    },
    /** Applies the moves (inside the group's transaction, before its COMMIT). */
    flush(): void {
      for (let i = 0; i < usageMoves.length; i += 2) {
        const before = usageMoves[i];
        const after = usageMoves[i + 1];
        if (before) accumulate(before, -1);
        if (after) accumulate(after, 1);
      }
      usageMoves.length = 0;
      for (let i = 0; i < statsMoves.length; i += 2) stats.move(statsMoves[i], statsMoves[i + 1]);
      statsMoves.length = 0;
      for (const d of pending.values()) {
        if (d.requests === 0 && d.bytes === 0 && d.lines === 0) continue;
        add.run(d.appKey, d.hour, d.versionKey, d.requests, d.bytes, d.lines);
        if (d.requests < 0 || d.bytes < 0 || d.lines < 0) dropEmpty.run(d.appKey, d.hour, d.versionKey);
      }
      pending.clear();
      stats.flush();
    },
    /** Drops the moves and what is known of the stored cells: a group that did not commit. */
    discard(): void {
      usageMoves.length = 0;
      statsMoves.length = 0;
      pending.clear();
      stats.discard();
    },
    forgetStatsNames: () => stats.forgetNames(),
  };
}

export interface Rollups {
  /** Moves a row's share from `before` (absent for a new row) to `after` (absent for a deleted row). */
  move(before: UsageShare | undefined, after: UsageShare | undefined): void;
  /** Moves a request's share of the stats rollups (stats-rollups.ts), the same way. */
  moveStats(before: StatsShare | undefined, after: StatsShare | undefined): void;
  /** Where the moves so far end (taken as a write starts). */
  mark(): RollupsMark;
  /** Forgets the moves after `mark`: those of a write that failed (its savepoint rolled back). */
  cutBack(mark: RollupsMark): void;
  /** Applies the moves (inside the group's transaction, before its COMMIT). */
  flush(): void;
  /** Drops the moves and what is known of the stored cells: a group that did not commit. */
  discard(): void;
  /** Forgets the Stats names' keys known (Delete dropped names nothing counts any more). */
  forgetStatsNames(): void;
}

/**
 * Counts the requests stored before migration 004 into the stats rollups,
 * in one transaction, when the migration has left its marker (a new
 * database has no rows: the marker just goes). Pages by id: better-sqlite3
 * runs no write while a statement is iterating.
 */
function backfillStats(db: Database.Database, stats: StatsRollups): void {
  if (db.prepare("SELECT 1 FROM meta WHERE key = 'stats_backfill'").get() === undefined) return;
  const page = db
    .prepare(`${storedRowSql} FROM requests r WHERE r.id > ? AND r.has_record = 1 AND r.finished = 1 ORDER BY r.id LIMIT 5000`)
    .safeIntegers(true);
  db.transaction(() => {
    for (let after = 0n; ; ) {
      const rows = page.all(after) as StoredRow[];
      if (rows.length === 0) break;
      for (const row of rows) stats.move(undefined, statsShareOf(row));
      stats.flush();
      after = rows.at(-1)!.id;
    }
    db.prepare("DELETE FROM meta WHERE key = 'stats_backfill'").run();
  })();
}

import type Database from "better-sqlite3";

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

/**
 * Keeps usage_hourly equal to a recount of the rows: every change to a row
 * takes its old share out and puts its new share in, in the same transaction.
 */
export function createRollups(db: Database.Database) {
  const add = db.prepare(`
    INSERT INTO usage_hourly (app_key, hour, version_key, requests, bytes, lines) VALUES (?, ?, ?, ?, ?, ?)
    ON CONFLICT (app_key, hour, version_key) DO UPDATE SET
      requests = requests + excluded.requests, bytes = bytes + excluded.bytes, lines = lines + excluded.lines`);
  const dropEmpty = db.prepare(
    "DELETE FROM usage_hourly WHERE app_key = ? AND hour = ? AND version_key = ? AND requests = 0 AND lines = 0 AND bytes = 0",
  );

  function apply(share: UsageShare, sign: 1 | -1): void {
    add.run(share.appKey, share.hour, share.versionKey, sign * share.requests, sign * share.bytes, sign * share.lines);
    if (sign < 0) dropEmpty.run(share.appKey, share.hour, share.versionKey);
  }

  return {
    /** Moves a row's share from `before` (absent for a new row) to `after` (absent for a deleted row). */
    move(before: UsageShare | undefined, after: UsageShare | undefined): void {
      if (
        before &&
        after &&
        before.appKey === after.appKey &&
        before.hour === after.hour &&
        before.versionKey === after.versionKey
      ) {
        add.run(after.appKey, after.hour, after.versionKey, after.requests - before.requests, after.bytes - before.bytes, after.lines - before.lines);
        return;
      }
      if (before) apply(before, -1);
      if (after) apply(after, 1);
    },
  };
}

import type Database from "better-sqlite3";
import { currentSeqSql } from "../rows/sql.js";

/**
 * The change sequence and paging history. Every change to a request row
 * takes the next sequence number (kept in meta within the same
 * transaction), so Tail and paged Reads can tell what changed after a
 * point; numbers used by a rolled-back write are skipped. A new row's
 * number is its id; a change to an existing row leaves an `updates` row
 * with where the row stood before it, so a Read paging from an older
 * snapshot still finds it there. History older than the offsets' lifetime
 * is pruned (`prune`), and offsets from before the pruned point are
 * refused as expired (`floor`).
 */
export function createChangeLog(db: Database.Database): ChangeLog {
  const stmt = {
    lastSeq: db.prepare(currentSeqSql).pluck().safeIntegers(true),
    saveSeq: db.prepare("UPDATE meta SET value = ? WHERE key = 'seq'"),
    insertUpdate: db.prepare("INSERT INTO updates (seq, request_key, old_sort_time) VALUES (?, ?, ?)"),
    markSeq: db.prepare("INSERT OR REPLACE INTO seq_marks (time, seq) VALUES (?, ?)"),
    markBefore: db.prepare("SELECT seq FROM seq_marks WHERE time <= ? ORDER BY time DESC LIMIT 1").pluck().safeIntegers(true),
    pruneMarks: db.prepare("DELETE FROM seq_marks WHERE time < ?"),
    pruneUpdates: db.prepare("DELETE FROM updates WHERE seq <= ?"),
    setMovesFloor: db.prepare("UPDATE meta SET value = max(value, ?) WHERE key = 'moves_floor'"),
  };
  let seq = stmt.lastSeq.get() as bigint;
  let saved = seq;

  return {
    next(): bigint {
      seq += 1n;
      return seq;
    },
    /** The last number given out (a row's id is never above it). */
    last(): bigint {
      return seq;
    },
    /** Saves the last number used (inside the write's transaction), when it moved. */
    save(): void {
      if (seq === saved) return;
      stmt.saveSeq.run(seq);
      saved = seq;
    },
    /**
     * After a group that did not commit: what is saved is what meta holds
     * again (the numbers given out stay used). Left at the rolled-back
     * save, the next group that takes no number (a search catch-up) kept
     * meta's seq below the index's mark, and after a restart new rows took
     * ids at or below it, never indexed.
     */
    forget(): void {
      saved = stmt.lastSeq.get() as bigint;
    },
    /** Notes that the change `changeSeq` changed an existing row, which stood at `oldSortTime`. */
    noteUpdate(rowId: bigint, oldSortTime: bigint, changeSeq: bigint): void {
      stmt.insertUpdate.run(changeSeq, rowId, oldSortTime);
    },
    /**
     * Marks the sequence number reached at `now`, then drops history before
     * the last mark at or before `cutoff` (µs): offsets from before it expire.
     */
    prune(now: bigint, cutoff: bigint): void {
      stmt.markSeq.run(now, seq);
      const floor = stmt.markBefore.get(cutoff) as bigint | undefined;
      if (floor !== undefined) {
        stmt.pruneUpdates.run(floor);
        stmt.setMovesFloor.run(floor);
        stmt.pruneMarks.run(cutoff);
      }
    },
  };
}

export interface ChangeLog {
  next(): bigint;
  /** The last number given out (a row's id is never above it). */
  last(): bigint;
  /** Saves the last number used (inside the write's transaction), when it moved. */
  save(): void;
  /** After a group that did not commit: what is saved is what meta holds again. */
  forget(): void;
  /** Notes that the change `changeSeq` changed an existing row, which stood at `oldSortTime`. */
  noteUpdate(rowId: bigint, oldSortTime: bigint, changeSeq: bigint): void;
  /**
   * Marks the sequence number reached at `now`, then drops history before
   * the last mark at or before `cutoff` (µs): offsets from before it expire.
   */
  prune(now: bigint, cutoff: bigint): void;
}

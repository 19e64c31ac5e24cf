import type Database from "better-sqlite3";
import { currentSeqSql } from "./sql.js";

/**
 * The change sequence and paging history. Every change to a request row
 * takes the next sequence number (kept in meta within the same
 * transaction), so Tail and paged Reads can tell what changed after a point;
 * numbers used by a rolled-back write are skipped. A change that moves a
 * record in the newest-first order leaves a `moves` row with where it stood,
 * so a Read paging from an older snapshot still finds it there. History
 * older than the offsets' lifetime is pruned (`prune`), and offsets from
 * before the pruned point are refused as expired (`floor`).
 */
export function createChangeLog(db: Database.Database) {
  const stmt = {
    lastSeq: db.prepare(currentSeqSql).pluck().safeIntegers(true),
    saveSeq: db.prepare("UPDATE meta SET value = ? WHERE key = 'seq'"),
    insertMove: db.prepare("INSERT OR IGNORE INTO moves (request_key, seq, old_sort_time) VALUES (?, ?, ?)"),
    deleteMoves: db.prepare("DELETE FROM moves WHERE request_key = ?"),
    markSeq: db.prepare("INSERT OR REPLACE INTO seq_marks (time, seq) VALUES (?, ?)"),
    markBefore: db.prepare("SELECT seq FROM seq_marks WHERE time <= ? ORDER BY time DESC LIMIT 1").pluck().safeIntegers(true),
    pruneMarks: db.prepare("DELETE FROM seq_marks WHERE time < ?"),
    pruneMoves: db.prepare("DELETE FROM moves WHERE seq <= ?"),
    setMovesFloor: db.prepare("UPDATE meta SET value = max(value, ?) WHERE key = 'moves_floor'"),
  };
  let seq = stmt.lastSeq.get() as bigint;

  return {
    next(): bigint {
      seq += 1n;
      return seq;
    },
    /** Saves the last number used (inside the write's transaction). */
    save(): void {
      stmt.saveSeq.run(seq);
    },
    /** Remembers where a row stood before the change `changeSeq` moved it from `oldSortTime` to `sortTime`. */
    noteMove(rowId: bigint, oldSortTime: bigint, sortTime: bigint, changeSeq: bigint): void {
      if (oldSortTime !== sortTime) stmt.insertMove.run(rowId, changeSeq, oldSortTime);
    },
    /** Forgets a deleted row's history. */
    forgetRow(rowId: bigint): void {
      stmt.deleteMoves.run(rowId);
    },
    /**
     * Marks the sequence number reached at `now`, then drops history before
     * the last mark at or before `cutoff` (µs): offsets from before it expire.
     */
    prune(now: bigint, cutoff: bigint): void {
      stmt.markSeq.run(now, seq);
      const floor = stmt.markBefore.get(cutoff) as bigint | undefined;
      if (floor !== undefined) {
        stmt.pruneMoves.run(floor);
        stmt.setMovesFloor.run(floor);
        stmt.pruneMarks.run(cutoff);
      }
    },
  };
}

export type ChangeLog = ReturnType<typeof createChangeLog>;

import type Database from "better-sqlite3";
import type { Clock } from "../../clock.js";
import type { Maintenance } from "../store.js";
import type { ChangeLog } from "./write/change-log.js";
import { type Rollups, shareOf, statsShareOf } from "./write/rollups.js";
import type { SearchIndex } from "./rows/search-doc.js";
import { storedRowSql } from "./rows/sql.js";
import { guarded } from "./storage-error.js";
import { type ErasedRow, leftoverColumnsSql, type RequestEraser } from "./write/request-eraser.js";
import { truncateWal } from "./write/truncate-wal.js";
import type { RunChange } from "./write/write-transaction.js";

/** Free pages handed back to the file system per compaction. */
const vacuumPages = 2048;

/**
 * Retention and compaction on SQLite: old requests deleted oldest first
 * with their lines and search documents (the rollups follow), paging
 * history pruned, and freed pages returned by incremental vacuum.
 */
export function createSqliteMaintenance(
  db: Database.Database,
  now: Clock,
  change: RunChange,
  changes: ChangeLog,
  rollups: Rollups,
  search: SearchIndex,
  eraser: Pick<RequestEraser, "left" | "sweep">,
): Maintenance {
  const stmt = {
    apps: db.prepare("SELECT id FROM apps").pluck(),
    expiring: db
      .prepare(`
        ${storedRowSql}, ${leftoverColumnsSql}
        FROM requests r INDEXED BY requests_by_time
        WHERE r.app_key = ? AND r.sort_time < ? ORDER BY r.sort_time LIMIT ?`)
      .safeIntegers(true),
    deleteRequest: db.prepare("DELETE FROM requests WHERE id = ?"),
  };

  return {
    expire(cutoff, limit, signal) {
      return change(() => {
        let deleted = 0;
        for (const app of stmt.apps.all() as number[]) {
          for (const row of stmt.expiring.all(app, cutoff, limit - deleted) as ErasedRow[]) {
            // Its `updates` stay until pruned by age: they name no other row (keys are not reused).
            if (row.has_record === 1n) search.remove(row);
            stmt.deleteRequest.run(row.id);
            rollups.move(shareOf(row), undefined);
            rollups.moveStats(statsShareOf(row), undefined);
            eraser.left(row);
            deleted++;
          }
          if (deleted >= limit) break;
        }
        return deleted;
      }, signal);
    },

    async compact(historyCutoff, signal) {
      await change(() => changes.prune(now(), historyCutoff), signal);
      // The strings and Stats names only expired requests used, then the pages freed (overwritten: secure_delete),
      // then the log, so that what retention deleted is in neither file.
      await eraser.sweep(signal);
      await guarded(signal, () => db.pragma(`incremental_vacuum(${vacuumPages})`));
      await guarded(signal, () => truncateWal(db));
    },
  };
}

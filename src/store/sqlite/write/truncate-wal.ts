import type Database from "better-sqlite3";

/** Attempts at it while readers hold the log, 50 ms apart. */
const attempts = 40;

/**
 * Moves the write-ahead log into the database and truncates it to nothing,
 * so pages written before a delete (the deleted text among them) are in
 * neither file. A reader in the middle of a transaction holds the log: the
 * checkpoint is tried without waiting (the main thread must not block) and
 * again a little later, for up to two seconds; false when readers held it
 * that long (the next compaction tries again).
 */
export async function truncateWal(db: Database.Database): Promise<boolean> {
  if (db.memory) return true;
  const timeout = db.pragma("busy_timeout", { simple: true }) as number;
  for (let attempt = 0; attempt < attempts; attempt++) {
    db.pragma("busy_timeout = 0");
    try {
      const [result] = db.pragma("wal_checkpoint(TRUNCATE)") as { busy: number }[];
      if (result?.busy === 0) return true;
    } finally {
      db.pragma(`busy_timeout = ${timeout}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

import Database from "better-sqlite3";
import { migrations } from "./migrations/index.js";

export type SyncMode = "full" | "normal";

export interface DatabaseOptions {
  /** A file path, or ":memory:". */
  path: string;
  /**
   * full: each commit is on disk before the write is acknowledged (survives
   * power loss); normal: survives a crash of the process, not of the machine.
   */
  sync?: SyncMode;
}

/**
 * The page cache of the writer's connection (KiB). All of it is resident
 * once the store outgrows it, as a soak's does within minutes: at 64 MB it
 * was the largest piece of the server's memory after the JS heaps
 * (docs/benchmarks.md). A page not cached is read from the OS's file cache;
 * Reads run on the read workers' connections with caches of their own.
 */
export const writerCacheKib = 16 * 1024;

/** Applies the migrations newer than the database's user_version, each in its own transaction. */
function migrate(db: Database.Database): void {
  const current = db.pragma("user_version", { simple: true }) as number;
  for (const m of migrations) {
    if (m.version <= current) continue;
    db.transaction(() => {
      if (m.sql) db.exec(m.sql);
      m.run?.(db);
      db.pragma(`user_version = ${m.version}`);
    })();
  }
}

/** Opens (creating if needed) and migrates a reqlog SQLite database. */
export function openDatabase(options: DatabaseOptions): Database.Database {
  const db = new Database(options.path);
  try {
    // Pages freed by retention go back to the file system bit by bit
    // (incremental_vacuum); this can only be chosen before the first table.
    if ((db.pragma("user_version", { simple: true }) as number) === 0) db.pragma("auto_vacuum = INCREMENTAL");
    // WAL: readers never block the writer, and a commit is one append.
    db.pragma("journal_mode = WAL");
    db.pragma(`synchronous = ${options.sync === "normal" ? "NORMAL" : "FULL"}`);
    // Another process (e.g. `reqlog token create`) may hold the write lock briefly.
    db.pragma("busy_timeout = 5000");
    db.pragma(`cache_size = -${writerCacheKib}`);
    // After a checkpoint the WAL file is cut back to this size, so a burst
    // of writes does not leave a large file behind.
    db.pragma("journal_size_limit = 67108864");
    db.pragma("temp_store = MEMORY");
    // What a delete frees (Delete, retention, a row rewritten) is overwritten
    // with zeros, not left in free space: erased text leaves the file
    // (docs/privacy.md). A connection's setting, so every open sets it.
    db.pragma("secure_delete = ON");
    migrate(db);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

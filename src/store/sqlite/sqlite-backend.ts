import { stat } from "node:fs/promises";
import type Database from "better-sqlite3";
import { type Clock, systemClock } from "../../clock.js";
import { defaultLimits } from "../../limits.js";
import type { RequestLineCap } from "../../write/request-line-cap.js";
import type { Backend } from "../store.js";
import { createChangeLog } from "./change-log.js";
import { createKeys } from "./keys.js";
import { openDatabase, type SyncMode } from "./open-database.js";
import { createReadPool, type ReadPool } from "./read-pool.js";
import { createRequestWriter } from "./request-writer.js";
import { createSqliteMaintenance } from "./retention.js";
import { createRollups } from "./rollups.js";
import { createSqliteReader } from "./sqlite-reader.js";
import type { SearchIndexUse } from "./snapshot-paging.js";
import { createSqliteStatuses } from "./sqlite-statuses.js";
import { createSqliteStore, type RunChange } from "./sqlite-store.js";
import { createSqliteTokens } from "./sqlite-tokens.js";
import { createSearchIndex } from "./search-doc.js";
import type { StopGramRule } from "./stop-grams.js";
import { createStrings } from "./strings.js";
import { guarded } from "./storage-error.js";
import { createWriteBatcher } from "./write-batcher.js";

export interface SqliteBackendOptions {
  /** The database file (created and migrated if needed), or ":memory:" (no read workers then). */
  path: string;
  /** full (default): acknowledged writes survive power loss; normal: a crash of the process. */
  sync?: SyncMode;
  /** Worker threads that run Reads on connections of their own (default 2; 0: on the calling thread). */
  readWorkers?: number;
  /** The clock (µs); the system clock by default. */
  now?: Clock;
  /** When regex Reads ask the search index (snapshot-paging.ts); `auto` by default. */
  searchIndex?: SearchIndexUse;
  /** When the search index stops indexing common grams (stop-grams.ts); tests make it quick. */
  stopGrams?: StopGramRule;
  /** What one request may hold of app lines (default: the limits' defaults). */
  requestLines?: RequestLineCap;
}

/** The SQLite backend, with its raw handle for the CLI and for tests that look at rows. */
export interface SqliteBackend extends Backend {
  readonly db: Database.Database;
  /** The read workers, when there are any. */
  readonly readPool: ReadPool | undefined;
}

const defaultReadWorkers = 2;

/**
 * Opens (creating and migrating) a SQLite database as a reqlog backend: one
 * connection for writes (the group commit) and small reads, and a pool of
 * read workers with connections of their own for Reads.
 */
export function openSqliteBackend(options: SqliteBackendOptions): SqliteBackend {
  const db = openDatabase({ path: options.path, sync: options.sync });
  const now = options.now ?? systemClock;
  const listeners = new Set<() => void>();
  const keys = createKeys(db);
  const strings = createStrings(db);
  const search = createSearchIndex(db, options.stopGrams);
  const rollups = createRollups(db);
  const batcher = createWriteBatcher(
    db,
    () => {
      for (const listener of listeners) listener();
    },
    () => {
      keys.forget();
      strings.forget();
      search.forget();
      rollups.discard();
    },
  );
  const changeLog = createChangeLog(db);
  const change: RunChange = (work, signal) =>
    guarded(signal, () =>
      batcher.run(() => {
        try {
          const result = work();
          rollups.flush();
          changeLog.save();
          return result;
        } catch (err) {
          rollups.discard();
          keys.forget();
          strings.forget();
          search.forget();
          throw err;
        }
      }, signal),
    );
  const workers = options.readWorkers ?? defaultReadWorkers;
  const readPool = workers > 0 && !db.memory ? createReadPool(db.name, workers, options.searchIndex) : undefined;

  return {
    db,
    readPool,
    store: createSqliteStore({
      db,
      now,
      change,
      writer: createRequestWriter(db, keys, strings, search, changeLog, rollups, options.requestLines ?? defaultLimits),
      reader: createSqliteReader(db, options.searchIndex),
      pool: readPool,
      listeners,
    }),
    statuses: createSqliteStatuses(db, batcher, now),
    tokens: createSqliteTokens(db, now),
    maintenance: createSqliteMaintenance(db, now, change, changeLog, rollups, search),
    async storageBytes() {
      if (db.memory) return 0;
      let bytes = 0;
      for (const file of [db.name, `${db.name}-wal`]) bytes += await stat(file).then((s) => s.size, () => 0);
      return bytes;
    },
    async close() {
      batcher.drain();
      await readPool?.close();
      db.close();
    },
  };
}

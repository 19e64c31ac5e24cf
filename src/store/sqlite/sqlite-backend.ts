import { stat } from "node:fs/promises";
import type Database from "better-sqlite3";
import { type Clock, systemClock } from "../../clock.js";
import { defaultLimits } from "../../limits.js";
import type { RequestLineCap } from "../../write/request-line-cap.js";
import type { Backend } from "../store.js";
import { createCommittedWrites } from "../committed-writes.js";
import { createChangeLog } from "./write/change-log.js";
import { createKeys } from "./rows/keys.js";
import { openDatabase, type SyncMode } from "./open-database.js";
import { createReadPool, type ReadPool } from "./read/read-pool.js";
import { createRequestEraser } from "./write/request-eraser.js";
import { createRequestWriter } from "./write/request-writer.js";
import { createSqliteMaintenance } from "./retention.js";
import { createRollups } from "./write/rollups.js";
import { createSqliteReader } from "./read/sqlite-reader.js";
import type { SearchIndexUse } from "./read/snapshot-paging.js";
import { createSqliteStatuses } from "./sqlite-statuses.js";
import { createSqliteStore } from "./sqlite-store.js";
import { createSqliteTokens } from "./sqlite-tokens.js";
import { createSearchIndex } from "./rows/search-doc.js";
import type { StopGramRule } from "./rows/stop-grams.js";
import { createStrings } from "./rows/strings.js";
import { createSearchCatchUp } from "./write/search-catch-up.js";
import { createWriteBatcher } from "./write/write-batcher.js";
import { createWriteTransaction, groupWrites } from "./write/write-transaction.js";

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
  /** Rows behind the search index's mark that make a catch-up index them (search-catch-up.ts). */
  searchCatchUp?: number;
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
  const search = createSearchIndex(db, strings, options.stopGrams);
  const rollups = createRollups(db);
  const changeLog = createChangeLog(db);
  const notes = createCommittedWrites();
  const batcher = createWriteBatcher(
    db,
    () => {
      notes.commit();
      for (const listener of listeners) listener();
      catchUp.afterCommit();
    },
    () => {
      notes.abort();
      keys.forget();
      strings.forget();
      search.forget();
      rollups.discard();
      changeLog.forget();
    },
    groupWrites(rollups, changeLog),
  );
  const change = createWriteTransaction({ batcher, keys, strings, search, rollups, notes });
  const catchUp = createSearchCatchUp(search, changeLog, change, options.searchCatchUp);
  const eraser = createRequestEraser({ db, change, rollups, search, strings });
  const workers = options.readWorkers ?? defaultReadWorkers;
  const readPool = workers > 0 && !db.memory ? createReadPool(db.name, workers, options.searchIndex) : undefined;

  return {
    db,
    readPool,
    store: createSqliteStore({
      db,
      now,
      change,
      writer: createRequestWriter(db, keys, strings, search, changeLog, rollups, notes, options.requestLines ?? defaultLimits),
      notes,
      erase: eraser.erase,
      reader: createSqliteReader(db, options.searchIndex),
      pool: readPool,
      listeners,
    }),
    statuses: createSqliteStatuses(db, batcher, now),
    tokens: createSqliteTokens(db, now),
    maintenance: createSqliteMaintenance(db, now, change, changeLog, rollups, search, eraser),
    async storageBytes() {
      if (db.memory) return 0;
      let bytes = 0;
      for (const file of [db.name, `${db.name}-wal`]) bytes += await stat(file).then((s) => s.size, () => 0);
      return bytes;
    },
    async close() {
      catchUp.stop();
      batcher.drain();
      await readPool?.close();
      db.close();
    },
  };
}

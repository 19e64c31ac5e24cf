import type { CommittedWrites } from "../../committed-writes.js";
import type { Keys } from "../rows/keys.js";
import type { SearchIndex } from "../rows/search-doc.js";
import type { Strings } from "../rows/strings.js";
import { guarded } from "../storage-error.js";
import type { ChangeLog } from "./change-log.js";
import type { Rollups } from "./rollups.js";
import type { WriteBatcher, WriteOptions } from "./write-batcher.js";

/**
 * Runs a write in the group commit (its own savepoint), its rollups and
 * change sequence kept with it; `options` say how it is queued: a bulk job
 * (a step of a Delete) committed on its own, a heavy write, the requests it
 * names (write-batcher.ts).
 */
export type RunChange = <T>(work: () => T, signal: AbortSignal, options?: WriteOptions) => Promise<T>;

/** What a write's transaction keeps beside the rows it changes. */
export interface WriteTransactionParts {
  batcher: WriteBatcher;
  keys: Keys;
  strings: Strings;
  search: SearchIndex;
  rollups: Rollups;
  /** What the writes tell the write observers once committed. */
  notes: CommittedWrites;
}

/**
 * The rules of a write's transaction: it runs in the group commit, in its
 * own savepoint; when it throws, the rollup moves it made are cut off, what
 * it noted for the write observers is forgotten, and the caches of keys,
 * strings and stop grams are dropped (what they hold may have been inserted
 * by the rolled-back savepoint). What the group's writes moved together
 * (the rollup cells, the last change sequence number, the search documents
 * waiting) is written once, before the group's COMMIT (`groupWrites`, the
 * batcher's beforeCommit).
 */
export function createWriteTransaction({ batcher, keys, strings, search, rollups, notes }: WriteTransactionParts): RunChange {
  return (work, signal, options) =>
    guarded(signal, () =>
      batcher.run(() => {
        const mark = notes.mark();
        const moved = rollups.mark();
        try {
          return work();
        } catch (err) {
          notes.undo(mark);
          rollups.cutBack(moved);
          keys.forget();
          strings.forget();
          search.forget();
          throw err;
        }
      }, signal, options),
    );
}

/** What a group commit writes once for all its writes, before its COMMIT. */
export function groupWrites(rollups: Rollups, changeLog: ChangeLog): () => void {
  return () => {
    rollups.flush();
    changeLog.save();
  };
}

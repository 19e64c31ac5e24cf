import type { CommittedWrites } from "../../committed-writes.js";
import type { Keys } from "../rows/keys.js";
import type { SearchIndex } from "../rows/search-doc.js";
import type { Strings } from "../rows/strings.js";
import { guarded } from "../storage-error.js";
import type { ChangeLog } from "./change-log.js";
import type { Rollups } from "./rollups.js";
import type { WriteBatcher } from "./write-batcher.js";

/** Runs a write in the group commit (its own savepoint), its rollups and change sequence kept with it. */
export type RunChange = <T>(work: () => T, signal: AbortSignal) => Promise<T>;

/** What a write's transaction keeps beside the rows it changes. */
export interface WriteTransactionParts {
  batcher: WriteBatcher;
  keys: Keys;
  strings: Strings;
  search: SearchIndex;
  rollups: Rollups;
  changeLog: ChangeLog;
  /** What the writes tell the write observers once committed. */
  notes: CommittedWrites;
}

/**
 * The rules of a write's transaction: it runs in the group commit, in its
 * own savepoint; when its work returns, the rollup cells it moved and the
 * last change sequence number are written within that savepoint; when it
 * throws, the rollups it moved are discarded, what it noted for the write
 * observers is forgotten, and the caches of keys, strings and stop grams are
 * dropped (what they hold may have been inserted by the rolled-back
 * savepoint).
 */
export function createWriteTransaction({ batcher, keys, strings, search, rollups, changeLog, notes }: WriteTransactionParts): RunChange {
  return (work, signal) =>
    guarded(signal, () =>
      batcher.run(() => {
        const mark = notes.mark();
        try {
          const result = work();
          rollups.flush();
          changeLog.save();
          return result;
        } catch (err) {
          notes.undo(mark);
          rollups.discard();
          keys.forget();
          strings.forget();
          search.forget();
          throw err;
        }
      }, signal),
    );
}

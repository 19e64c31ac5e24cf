import type { SearchIndex } from "../rows/search-doc.js";
import type { ChangeLog } from "./change-log.js";
import { heavyGroupWeight, noRequests } from "./write-batcher.js";
import type { RunChange } from "./write-transaction.js";

/**
 * Rows whose search documents are made together once this many ids have
 * been given out past the search index's mark (search-doc.ts), or sooner
 * when writes pause; and the most one catch-up indexes.
 */
export const defaultSearchCatchUp = 4096;

/** How long rows may wait for their search documents when writes pause (ms). */
const searchIdleMs = 1000;

export interface SearchCatchUp {
  /** After each commit: queues a catch-up when enough rows are behind, or arms the idle timer. */
  afterCommit(): void;
  /** Stops the idle timer (before closing). */
  stop(): void;
}

/**
 * New rows are indexed in bulk (search-doc.ts catchUp), by a job of its own
 * in the group commit: a heavy write that names no request and goes before
 * the queued heavy writes (write-batcher.ts), so that a light write never
 * waits for a catch-up and a heavy group in the same turn, and the index is
 * at most about `catchUpAt` and one heavy group behind. A job indexes at
 * most `catchUpAt` row ids; the commit after it queues the next while that
 * many are still behind.
 */
export function createSearchCatchUp(search: SearchIndex, changeLog: ChangeLog, change: RunChange, catchUpAt = defaultSearchCatchUp): SearchCatchUp {
  let queued = 0;
  let jobs = 0;
  let idleTimer: NodeJS.Timeout | undefined;
  const never = new AbortController().signal;

  function queue(): void {
    const job = ++jobs;
    queued = job;
    const done = () => {
      if (queued === job) queued = 0;
    };
    change(
      () => {
        // Running: the commit after it may queue the next.
        done();
        const last = changeLog.last();
        search.catchUp(last, last - search.behind(last) + BigInt(catchUpAt));
      },
      never,
      { first: true, weight: heavyGroupWeight, requests: noRequests },
    ).then(done, done);
  }

  return {
    afterCommit(): void {
      const behind = search.behind(changeLog.last());
      if (behind <= 0n) return;
      if (queued === 0 && behind >= BigInt(catchUpAt)) queue();
      // Rows written and not yet indexed are indexed soon even if no more writes come.
      if (idleTimer === undefined) {
        idleTimer = setTimeout(() => {
          idleTimer = undefined;
          if (queued === 0) queue();
        }, searchIdleMs);
        idleTimer.unref();
      }
    },
    stop(): void {
      clearTimeout(idleTimer);
    },
  };
}

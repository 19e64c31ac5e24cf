import type { FinishedRequest, NewLines, WriteObserver } from "./store.js";

/** Where a transaction's notes stood when a write began (to undo a write that failed). */
export interface WritesMark {
  finished: number;
  lines: number;
}

/**
 * What a backend's writes tell its WriteObservers, held until the
 * transaction that made them commits: a writer notes each request it stores
 * finished for the first time (and each new app line, when an observer wants
 * lines); a write that fails is undone back to its mark (a savepoint rolled
 * back), a transaction that fails drops them all, one that commits hands
 * them over. Both backends keep one, so the rule of what counts once is the
 * writers' (request-writer.ts) and the moment it is told is the commit's.
 */
export interface CommittedWrites {
  /** Whether any observer is there (the writers note nothing otherwise). */
  readonly watching: boolean;
  /** Whether any observer wants new lines. */
  readonly watchingLines: boolean;
  finished(request: FinishedRequest): void;
  lines(lines: NewLines): void;
  mark(): WritesMark;
  /** Forgets what was noted since `mark` (the write failed). */
  undo(mark: WritesMark): void;
  /** The transaction committed: tells every observer, then forgets. */
  commit(): void;
  /** The transaction failed: forgets. */
  abort(): void;
  /** Adds an observer until `signal` aborts. */
  observe(observer: WriteObserver, signal: AbortSignal): void;
}

export function createCommittedWrites(): CommittedWrites {
  const observers = new Set<WriteObserver>();
  let finished: FinishedRequest[] = [];
  let lines: NewLines[] = [];
  let watchingLines = false;
  const recount = () => {
    watchingLines = [...observers].some((o) => o.lines !== undefined);
  };

  return {
    get watching() {
      return observers.size > 0;
    },
    get watchingLines() {
      return watchingLines;
    },
    finished: (request) => void finished.push(request),
    lines: (stored) => void lines.push(stored),
    mark: () => ({ finished: finished.length, lines: lines.length }),
    undo(mark) {
      finished.length = Math.min(finished.length, mark.finished);
      lines.length = Math.min(lines.length, mark.lines);
    },
    commit() {
      if (finished.length === 0 && lines.length === 0) return;
      const told = { finished, lines };
      finished = [];
      lines = [];
      for (const observer of observers) {
        if (told.finished.length > 0) observer.finished(told.finished);
        if (told.lines.length > 0) observer.lines?.(told.lines);
      }
    },
    abort() {
      finished = [];
      lines = [];
    },
    observe(observer, signal) {
      if (signal.aborted) return;
      observers.add(observer);
      recount();
      signal.addEventListener(
        "abort",
        () => {
          observers.delete(observer);
          recount();
        },
        { once: true },
      );
    },
  };
}

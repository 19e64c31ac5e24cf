import type Database from "better-sqlite3";
import { ReqlogError } from "../../../reqlog-error.js";

interface PendingWrite {
  run: () => unknown;
  /** A write whose caller is gone before its group starts is not run. */
  signal: AbortSignal;
  /** A bulk job (a step of a Delete): committed in a transaction of its own, after the writes queued with it. */
  alone: boolean;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/** Most writes committed in one transaction. */
const maxGroup = 512;

export interface WriteBatcher {
  /**
   * Runs `fn` inside a transaction (unless `signal` aborts first); resolves
   * once that transaction has committed. With `alone`, `fn` is a bulk job
   * that gets a transaction of its own, and the writes queued when it would
   * start go first: a write waits for at most the bulk job already running.
   */
  run<T>(fn: () => T, signal: AbortSignal, alone?: boolean): Promise<T>;
  /** Commits everything queued now (used before closing). */
  drain(): void;
}

/**
 * Group commit. Writes that arrive in the same turn of the event loop share
 * one transaction, so many callers pay for one fsync. Each write runs in its
 * own savepoint: one that throws is rolled back alone and only its caller
 * gets the error. Callers are answered only after COMMIT returns; `onCommit`
 * runs after each commit (Tail wakes its followers there), `onAbort` after a
 * group that did not commit (caches of what it wrote are dropped there), and
 * `beforeCommit` after the group's writes, inside its transaction (what they
 * moved together is written there: a failure there fails the whole group).
 */
export function createWriteBatcher(
  db: Database.Database,
  onCommit: () => void = () => {},
  onAbort: () => void = () => {},
  beforeCommit: () => void = () => {},
): WriteBatcher {
  let queue: PendingWrite[] = [];
  let scheduled = false;

  // The error that made SQLite roll back the whole transaction, if one did.
  let aborted: unknown;
  const commitGroup = db.transaction((group: PendingWrite[]) => {
    aborted = undefined;
    const outcomes = group.map((w) => {
      // Some errors (a full disk among them) make SQLite roll back the whole
      // transaction: the writes after it must not run outside one.
      if (aborted !== undefined) return { ok: false as const, err: aborted };
      if (w.signal.aborted) return { ok: false as const, err: ReqlogError.cancelled() };
      try {
        // A nested better-sqlite3 transaction is a SAVEPOINT.
        return { ok: true as const, value: db.transaction(w.run)() };
      } catch (err) {
        if (!db.inTransaction) aborted = err;
        return { ok: false as const, err };
      }
    });
    if (aborted !== undefined) throw aborted;
    beforeCommit();
    return outcomes;
  });

  /** The next group: the writes queued (in order, up to maxGroup), or else the first bulk job alone. */
  function nextGroup(): PendingWrite[] {
    if (!queue.some((w) => w.alone)) return queue.splice(0, maxGroup);
    const writes = queue.filter((w) => !w.alone).slice(0, maxGroup);
    const group = writes.length > 0 ? writes : queue.slice(0, 1);
    const taken = new Set(group);
    queue = queue.filter((w) => !taken.has(w));
    return group;
  }

  /** Commits one group; its callers are answered once the turn ends. */
  function commitOne(group: PendingWrite[]): void {
    let outcomes: ReturnType<typeof commitGroup>;
    try {
      outcomes = commitGroup(group);
    } catch (err) {
      // COMMIT failed, or SQLite had already rolled the transaction back
      // (then COMMIT finds none): nothing of the group is stored, and the
      // error that caused it is the one to report.
      onAbort();
      for (const w of group) w.reject(aborted ?? err);
      return;
    }
    onCommit();
    group.forEach((w, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) w.resolve(outcome.value);
      else w.reject(outcome.err);
    });
  }

  function schedule(): void {
    if (scheduled) return;
    scheduled = true;
    setImmediate(turn);
  }

  // A bulk job put off by a turn's writes: it runs in the next turn, after that turn's writes.
  let bulkDue = false;

  /**
   * A turn of the event loop's commits: the writes queued, then at most one
   * bulk job. A bulk job after writes waits for the next turn (their callers
   * are answered before it starts), and then runs after that turn's writes,
   * whatever they are (so a stream of writes cannot hold it off).
   */
  function turn(): void {
    scheduled = false;
    let wrote = false;
    while (queue.length > 0) {
      const group = nextGroup();
      if (!group[0]!.alone) {
        commitOne(group);
        wrote = true;
        continue;
      }
      if (wrote && !bulkDue) {
        queue.unshift(...group);
        bulkDue = true;
      } else {
        bulkDue = false;
        commitOne(group);
      }
      if (queue.length > 0) schedule();
      return;
    }
  }

  function drain(): void {
    scheduled = false;
    while (queue.length > 0) commitOne(nextGroup());
  }

  return {
    run<T>(fn: () => T, signal: AbortSignal, alone = false): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({ run: fn, signal, alone, resolve: resolve as (value: unknown) => void, reject });
        schedule();
      });
    },
    drain,
  };
}

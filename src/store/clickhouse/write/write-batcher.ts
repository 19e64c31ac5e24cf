import { ReqlogError } from "../../../reqlog-error.js";

/** How a work of a group ended. */
export type Outcome = { ok: true; value: unknown } | { ok: false; err: unknown };

interface Queued<W> {
  /** A work for a group; undefined for a task that runs alone. */
  work?: W;
  task?: () => Promise<unknown>;
  /** A work whose caller is gone before its group starts is not run. */
  signal: AbortSignal | undefined;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/** Most works in one group (one INSERT), and most requests they may name together. */
const maxGroup = 1024;
const maxGroupWeight = 20_000;

export interface WriteBatcher<W> {
  /** Queues `work` for the next group; resolves with its outcome once the group's insert was accepted. */
  run<T>(work: W, signal: AbortSignal | undefined): Promise<T>;
  /** Runs `task` alone, after the groups queued before it and before those queued after. */
  alone<T>(task: () => Promise<T>, signal: AbortSignal | undefined): Promise<T>;
  /** Resolves once everything queued now has run. */
  drain(): Promise<void>;
}

/**
 * Group commit for ClickHouse, which wants few, large inserts: writes that
 * arrive while a group is being stored (or in the same turn of the event
 * loop) become the next group, committed by `commitGroup` as one INSERT.
 * Groups run one at a time, in order, so each starts from what the last one
 * stored. Callers are answered only after ClickHouse accepted the insert; a
 * failed insert fails every write of its group.
 */
export function createWriteBatcher<W>(
  commitGroup: (works: W[]) => Promise<Outcome[]>,
  /** How many requests a work names (a group stops before naming more than maxGroupWeight; one work always goes). */
  weightOf: (work: W) => number,
): WriteBatcher<W> {
  const queue: Queued<W>[] = [];
  let running: Promise<void> | undefined;

  /** The works of one group, those whose callers are still there. */
  function takeGroup(): Queued<W>[] {
    let n = 0;
    let weight = 0;
    while (n < queue.length && n < maxGroup && queue[n]!.work !== undefined) {
      weight += weightOf(queue[n]!.work!);
      if (n > 0 && weight > maxGroupWeight) break;
      n++;
    }
    return queue.splice(0, n).filter((q) => {
      if (q.signal?.aborted) q.reject(ReqlogError.cancelled());
      return !q.signal?.aborted;
    });
  }

  async function runQueued(): Promise<void> {
    await new Promise((r) => setImmediate(r));
    while (queue.length > 0) {
      if (queue[0]!.task) {
        const q = queue.shift()!;
        if (q.signal?.aborted) q.reject(ReqlogError.cancelled());
        else await q.task!().then(q.resolve, q.reject);
        continue;
      }
      const group = takeGroup();
      if (group.length === 0) continue;
      let outcomes: Outcome[];
      try {
        outcomes = await commitGroup(group.map((q) => q.work!));
      } catch (err) {
        for (const q of group) q.reject(err);
        continue;
      }
      group.forEach((q, i) => {
        const outcome = outcomes[i]!;
        if (outcome.ok) q.resolve(outcome.value);
        else q.reject(outcome.err);
      });
    }
    running = undefined;
  }

  function enqueue<T>(entry: Omit<Queued<W>, "resolve" | "reject">): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      queue.push({ ...entry, resolve: resolve as (value: unknown) => void, reject });
      running ??= runQueued();
    });
  }

  return {
    run: (work, signal) => enqueue({ work, signal }),
    alone: (task, signal) => enqueue({ task, signal }),
    async drain() {
      while (running) await running;
    },
  };
}

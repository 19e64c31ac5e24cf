import type Database from "better-sqlite3";
import { ReqlogError } from "../../../reqlog-error.js";

/** How a write is queued (all optional: a light write that may name any request). */
export interface WriteOptions {
  /** A bulk job (a step of a Delete): committed in a transaction of its own, after the writes queued with it. */
  alone?: boolean;
  /** The records and lines it stores: from `heavyWeight` on, a heavy write (an Ingest batch of an import). */
  weight?: number;
  /**
   * The requests it names (keys made by `requestKey`), asked only when a
   * light write must be ordered against queued heavy ones; without it, the
   * write may name any request.
   */
  requests?: () => Iterable<string>;
  /** Goes before the queued heavy writes (a job that names no request: the search index's catch-up). */
  first?: boolean;
}

/** The key of a request for `WriteOptions.requests`: two requests share one only if they are the same. */
export const requestKey = (appId: string, requestId: Uint8Array): string =>
  `${appId}\u0000${Buffer.from(requestId.buffer, requestId.byteOffset, requestId.byteLength).toString("latin1")}`;

/** For `WriteOptions.requests`: a write that names no request (an instance's status, the search catch-up). */
export const noRequests = (): Iterable<string> => [];

interface PendingWrite {
  run: () => unknown;
  /** A write whose caller is gone before its group starts is not run. */
  signal: AbortSignal;
  /** Arrival order. */
  seq: number;
  weight: number;
  requests: (() => Iterable<string>) | undefined;
  /** `requests` as a set, made when first needed. */
  named?: Set<string>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/** Most writes committed in one transaction. */
const maxGroup = 512;
/** A write that stores this many records and lines or more is heavy. */
export const heavyWeight = 128;
/** Heavy writes share a transaction up to this weight (a heavier one is alone in its own). */
export const heavyGroupWeight = 1024;

export interface WriteBatcher {
  /**
   * Runs `fn` inside a transaction (unless `signal` aborts first); resolves
   * once that transaction has committed. The order of the queues is in
   * `createWriteBatcher`.
   */
  run<T>(fn: () => T, signal: AbortSignal, options?: WriteOptions): Promise<T>;
  /** Commits everything queued now (used before closing). */
  drain(): void;
}

/**
 * Group commit. Writes queued in the same turn of the event loop share one
 * transaction, so many callers pay for one fsync. Each write runs in its
 * own savepoint: one that throws is rolled back alone and only its caller
 * gets the error. Callers are answered only after COMMIT returns; `onCommit`
 * runs after each commit (Tail wakes its followers there), `onAbort` after a
 * group that did not commit (caches of what it wrote are dropped there), and
 * `beforeCommit` after the group's writes, inside its transaction (what they
 * moved together is written there: a failure there fails the whole group).
 *
 * Three queues, so that a small write waits for at most one big piece of
 * work: light writes; heavy writes (an import's Ingest batches, the search
 * catch-up); bulk jobs (`alone`). A turn of the event loop commits either
 * every light write queued, or one heavy group (heavy writes up to
 * heavyGroupWeight), or one bulk job, never two of these: the callers of a
 * turn are answered before the next turn starts, and the network is read
 * between turns. Under load, light turns and big turns take turns; a bulk
 * job waits for at most one heavy group.
 *
 * Writes that name the same request commit in the order they were queued:
 * a light write that names a request a queued heavy write names (or that
 * may name any) is queued with the heavy writes, behind it; and a heavy
 * group takes only heavy writes queued before every light write still
 * waiting. So a light write overtakes only heavy writes that name none of
 * its requests.
 */
export function createWriteBatcher(
  db: Database.Database,
  onCommit: () => void = () => {},
  onAbort: () => void = () => {},
  beforeCommit: () => void = () => {},
): WriteBatcher {
  let light: PendingWrite[] = [];
  let heavy: PendingWrite[] = [];
  let bulk: PendingWrite[] = [];
  let arrivals = 0;
  let scheduled = false;
  // A big turn (a heavy group or a bulk job) is next when one waits, so a stream of light writes cannot hold it off.
  let bigDue = false;
  // A bulk job put off by a heavy group runs in the next big turn.
  let bulkDue = false;

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

  const namedBy = (w: PendingWrite): Set<string> => (w.named ??= new Set(w.requests!()));

  /** Whether a light write must stay behind a queued heavy write: one names a request the other does (or may). */
  function behindHeavy(w: PendingWrite): boolean {
    if (heavy.length === 0) return false;
    if (w.requests === undefined) return true;
    for (const key of w.requests()) {
      for (const h of heavy) if (h.requests === undefined || namedBy(h).has(key)) return true;
    }
    return false;
  }

  /** The heavy writes at the front queued before every light write still waiting, up to heavyGroupWeight. */
  function heavyGroup(): PendingWrite[] {
    const before = light.length > 0 ? light[0]!.seq : Infinity;
    let weight = 0;
    let n = 0;
    while (n < heavy.length && n < maxGroup) {
      const w = heavy[n]!;
      if (w.seq > before || (n > 0 && weight + w.weight > heavyGroupWeight)) break;
      weight += w.weight;
      n++;
    }
    return heavy.splice(0, n);
  }

  function commitLights(): void {
    while (light.length > 0) commitOne(light.splice(0, maxGroup));
  }

  function schedule(): void {
    if (scheduled) return;
    scheduled = true;
    setImmediate(turn);
  }

  function turn(): void {
    scheduled = false;
    const heavyReady = heavy.length > 0 && (light.length === 0 || heavy[0]!.seq < light[0]!.seq);
    const bigWaiting = heavyReady || bulk.length > 0;
    if (light.length > 0 && !(bigDue && bigWaiting)) {
      commitLights();
      bigDue = heavy.length + bulk.length > 0;
    } else if (bulk.length > 0 && (bulkDue || !heavyReady)) {
      bulkDue = false;
      bigDue = false;
      commitOne(bulk.splice(0, 1));
    } else if (heavyReady) {
      bigDue = false;
      bulkDue = bulk.length > 0;
      commitOne(heavyGroup());
    }
    if (light.length + heavy.length + bulk.length > 0) schedule();
  }

  function drain(): void {
    scheduled = false;
    for (;;) {
      if (light.length > 0) commitLights();
      else if (heavy.length > 0) commitOne(heavyGroup());
      else if (bulk.length > 0) commitOne(bulk.splice(0, 1));
      else return;
    }
  }

  return {
    run<T>(fn: () => T, signal: AbortSignal, options: WriteOptions = {}): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        const w: PendingWrite = {
          run: fn,
          signal,
          seq: arrivals++,
          weight: options.weight ?? 1,
          requests: options.requests,
          resolve: resolve as (value: unknown) => void,
          reject,
        };
        if (options.alone) bulk.push(w);
        else if (options.first) heavy.unshift(w);
        else if (w.weight >= heavyWeight || behindHeavy(w)) heavy.push(w);
        else light.push(w);
        schedule();
      });
    },
    drain,
  };
}

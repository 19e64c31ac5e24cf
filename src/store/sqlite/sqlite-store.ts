import type Database from "better-sqlite3";
import type { Clock } from "../../clock.js";
import type { PreparedRecord, RequestLines } from "../../domain/records.js";
import type { CommittedWrites } from "../committed-writes.js";
import type { Store } from "../store.js";
import { writeRecords } from "../write-records.js";
import { decodePosition, encodePosition } from "./read/cursor.js";
import type { ReadPool } from "./read/read-pool.js";
import type { EraseRequests } from "./write/request-eraser.js";
import type { RequestWriter } from "./write/request-writer.js";
import { requestKey, type WriteOptions } from "./write/write-batcher.js";
import type { RunChange } from "./write/write-transaction.js";
import type { SqliteReader } from "./read/sqlite-reader.js";
import { createStatsReader, readsFewRows } from "./stats/sqlite-stats.js";
import { createUsageReader } from "./read/sqlite-usage.js";
import { guarded, throwIfCancelled } from "./storage-error.js";

/** How a write is queued in the group commit (write-batcher.ts): its weight and the requests it names. */
function queuedAs(records: readonly PreparedRecord[], flushes: readonly RequestLines[]): WriteOptions {
  let weight = records.length;
  for (const r of records) weight += r.lines.length;
  for (const f of flushes) weight += f.lines.length;
  return {
    weight,
    *requests() {
      for (const r of records) yield requestKey(r.log.appId, r.log.requestId);
      for (const f of flushes) yield requestKey(f.request.appId, f.request.requestId);
    },
  };
}

export interface SqliteStoreParts {
  db: Database.Database;
  now: Clock;
  change: RunChange;
  writer: RequestWriter;
  /** Reads on the writer's connection: Tail's changes, records by id, and Reads and Stats when there is no pool. */
  reader: SqliteReader;
  pool: ReadPool | undefined;
  /** Listeners called after every commit. */
  listeners: Set<() => void>;
  /** What the writes committed tell the write observers. */
  notes: CommittedWrites;
  /** Delete (request-eraser.ts). */
  erase: EraseRequests;
}

/**
 * The record store on SQLite. Every method owns one transaction (writes
 * share theirs through the group-commit batcher); reads of the request rows
 * go to the read workers when there are any.
 */
export function createSqliteStore({ db, now, change, writer, reader, pool, listeners, notes, erase }: SqliteStoreParts): Store {
  const usage = createUsageReader(db);
  const stats = createStatsReader(db);
  const offsetKey = db.prepare("SELECT value FROM meta WHERE key = 'offset_key'").pluck();

  return {
    write(records, signal) {
      return change(
        () => writeRecords(writer, records, [], now()),
        signal,
        queuedAs(records, []),
      );
    },

    ingest(records, flushes, signal) {
      return change(
        () => writeRecords(writer, records, flushes, now()),
        signal,
        queuedAs(records, flushes),
      );
    },

    flush(request, lines, signal) {
      return change(() => writer.flushLines(request, lines, now()), signal, queuedAs([], [{ request, lines }]));
    },

    read(plan, signal) {
      return guarded(signal, async () => {
        if (pool) return pool.read(plan, signal);
        // On this thread a scan runs to its budget; a cancelled call is not answered.
        const result = reader.read(plan);
        throwIfCancelled(signal);
        return result;
      });
    },

    query(plan, signal) {
      return guarded(signal, async () => {
        if (pool) return pool.query(plan, signal);
        const result = reader.query(plan);
        throwIfCancelled(signal);
        return result;
      });
    },

    getRequests(appId, requestIds, signal) {
      return guarded(signal, () => reader.getRequests(appId, requestIds));
    },

    usage(plan, signal) {
      return guarded(signal, () => usage(plan));
    },

    stats(plan, signal) {
      // On a worker when there are any, unless it reads a few thousand rows at most (a month's time series):
      // a month of a busy app's route cells is read without holding the writers back.
      return guarded(signal, () => (pool && !readsFewRows(plan) ? pool.stats(plan, signal) : stats(plan)));
    },

    changePosition(signal) {
      return guarded(signal, () => encodePosition(reader.currentSeq()));
    },

    changes(plan, after, limit, signal) {
      return guarded(signal, () => {
        const { records, lastSeq, caughtUp } = reader.changes(plan, decodePosition(after), limit);
        return { records, position: encodePosition(lastSeq), caughtUp };
      });
    },

    subscribe(listener, signal) {
      return guarded(signal, () => {
        listeners.add(listener);
        signal.addEventListener("abort", () => listeners.delete(listener), { once: true });
      });
    },

    delete: erase,

    offsetKey(signal) {
      return guarded(signal, () => new Uint8Array(offsetKey.get() as Buffer));
    },

    observeWrites: notes.observe,
  };
}

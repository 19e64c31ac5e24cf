import type { Clock } from "../../clock.js";
import type { AppLine } from "../../domain/records.js";
import type { CommittedWrites } from "../committed-writes.js";
import type { Store, WriteResult } from "../store.js";
import { writeRecords } from "../write-records.js";
import { decodePosition, encodePosition } from "./read/cursor.js";
import type { GroupWork, Touch } from "./write/group-commit.js";
import type { RecordReader } from "./read/record-reader.js";
import { createStatsReader } from "./stats/clickhouse-stats.js";
import { createUsageReader } from "./read/clickhouse-usage.js";
import { createQueryReader } from "./read/query-reader.js";
import type { SnapshotPaging } from "./read/snapshot-paging.js";
import type { SqlClient } from "./sql-client.js";
import { bytesToText } from "./rows/sql-literal.js";
import { guarded } from "./storage-error.js";
import type { TailChanges } from "./read/tail-changes.js";
import type { EraseRequests } from "./write/request-eraser.js";
import type { WriteBatcher } from "./write/write-batcher.js";
import type { Snapshot } from "./read/snapshot.js";

export interface ClickHouseStoreParts {
  sql: SqlClient;
  /** The tables are spread over a cluster (their parts are on every shard). */
  onCluster?: boolean;
  now: Clock;
  /** The marks every server has published now (server-slots.ts). */
  marks: () => Promise<Snapshot>;
  batcher: WriteBatcher<GroupWork>;
  records: RecordReader;
  paging: SnapshotPaging;
  changes: TailChanges;
  offsetKey: Uint8Array;
  /** Listeners called after every group commit, and when another server's mark moves (subscribe). */
  listeners: Set<() => void>;
  /** Starts watching the other servers' marks while anyone is subscribed (resolves once their marks are read). */
  watch(): Promise<void>;
  /** What the groups committed tell the write observers. */
  notes: CommittedWrites;
  /** Delete (request-eraser.ts). */
  erase: EraseRequests;
}

const touch = (app: string, requestId: Uint8Array, lines: readonly AppLine[]): Touch => ({ app, requestId: bytesToText(requestId), lines });

/**
 * The record store on ClickHouse. Writes go through the group commit (one
 * INSERT per group, answered once ClickHouse accepted it); reads are
 * queries of the latest versions (FINAL).
 */
export function createClickHouseStore(parts: ClickHouseStoreParts): Store {
  const { sql, now, marks, batcher, records, paging, changes, listeners } = parts;
  const usage = createUsageReader(sql);
  const stats = createStatsReader(sql);
  const queries = createQueryReader(sql, records, parts.onCluster ?? false);
  const change = <T>(work: GroupWork, signal: AbortSignal) => guarded(signal, () => batcher.run<T>(work, signal));

  const store: Store = {
    write(records, signal) {
      return change<WriteResult>(
        {
          touches: records.map((r) => touch(r.log.appId, r.log.requestId, r.lines)),
          apply: (writer) => writeRecords(writer, records, [], now()),
        },
        signal,
      );
    },

    ingest(records, flushes, signal) {
      return change<WriteResult>(
        {
          touches: [
            ...records.map((r) => touch(r.log.appId, r.log.requestId, r.lines)),
            ...flushes.map((f) => touch(f.request.appId, f.request.requestId, f.lines)),
          ],
          apply: (writer) => writeRecords(writer, records, flushes, now()),
        },
        signal,
      );
    },

    flush(request, lines, signal) {
      return change<number>(
        { touches: [touch(request.appId, request.requestId, lines)], apply: (writer) => writer.flushLines(request, lines, now()) },
        signal,
      );
    },

    read(plan, signal) {
      return guarded(signal, () => paging.read(plan, signal));
    },

    getRequests(appId, requestIds, signal) {
      return guarded(signal, async () =>
        records.withAllLines(await records.byIds(appId, requestIds.map(bytesToText), [], signal), signal),
      );
    },

    usage(plan, signal) {
      return guarded(signal, () => usage(plan, signal));
    },

    stats(plan, signal) {
      return guarded(signal, () => stats(plan, signal));
    },

    query(plan, signal) {
      return guarded(signal, () => queries.query(plan, signal));
    },

    changePosition(signal) {
      return guarded(signal, async () => encodePosition(await marks()));
    },

    changes(plan, after, limit, signal) {
      return guarded(signal, async () => {
        const { records, position, caughtUp } = await changes(plan, decodePosition(after), await marks(), limit, signal);
        return { records, position: encodePosition(position), caughtUp };
      });
    },

    subscribe(listener, signal) {
      return guarded(signal, async () => {
        listeners.add(listener);
        await parts.watch();
        signal.addEventListener("abort", () => listeners.delete(listener), { once: true });
      });
    },

    delete: parts.erase,

    offsetKey(signal) {
      return guarded(signal, async () => parts.offsetKey);
    },

    observeWrites: parts.notes.observe,
  };
  return store;
}

import type { Clock } from "../../clock.js";
import type { Maintenance } from "../store.js";
import type { GroupCommit, GroupWork } from "./write/group-commit.js";
import { type RequestRow, requestsRead, selectStoredAsWritten } from "./rows/request-row.js";
import type { PagingHistory } from "./read/snapshot-paging.js";
import { heldSql, type Snapshot } from "./read/snapshot.js";
import { slotOf } from "./servers/change-clock.js";
import type { DatabaseLock } from "./servers/ddl-lock.js";
import type { ServerSlots } from "./servers/server-slots.js";
import type { SqlClient } from "./sql-client.js";
import type { TableLayout } from "./table-layout.js";
import { guarded } from "./storage-error.js";
import { sqlInt } from "./rows/sql-literal.js";
import type { WriteBatcher } from "./write/write-batcher.js";

const dayUs = 86_400_000_000n;

/**
 * What a tombstone needs of the request it ends: its key and what it counts
 * in the rollups (Usage and Stats). Its other columns take their defaults: a
 * deleted version is never read.
 */
export const tombstoneColumns = [
  "app", "request_id", "rkey", "created_at", "seq", "deleted", "sort_time", "finished", "module_id", "version_id",
  "has_record", "record_bytes", "line_bytes", "line_count",
  "url_map_entry", "resource", "status", "latency", "response_size", "ip", "user_agent",
].join(", ");

export interface MaintenanceParts {
  sql: SqlClient;
  layout: TableLayout;
  now: Clock;
  batcher: WriteBatcher<GroupWork>;
  commit: GroupCommit;
  slots: ServerSlots;
  history: PagingHistory;
  /** Held while one server expires or compacts: the others wait, then find the work done. */
  lock: DatabaseLock;
  /** A run another server finished less than this long ago (wall clock, ms) is not run again here (0: always run). */
  everyMs: number;
}

/**
 * Retention and compaction on ClickHouse. Expiring a request writes its
 * tombstone (a version marked deleted, its rollup share taken out) in the
 * write order, so the rollups stay exact; its lines are left behind, no
 * longer reachable (the next request of that id is a new incarnation).
 * Compaction prunes paging history as SQLite's does: it marks the sequence
 * number reached now and drops moves up to the last mark at or before the
 * cutoff; offsets from before that point expire. It then drops whole days
 * of requests (partitions) that retention has emptied.
 *
 * With several servers on the database, one at a time expires or compacts
 * (the maintenance lock); a run that another server finished within
 * `everyMs` is not run again, so retention runs once per period, not once
 * per server.
 */
export function createClickHouseMaintenance({ sql, layout, now, batcher, commit, slots, history, lock, everyMs }: MaintenanceParts): Maintenance {
  /** Runs `work` under the lock unless another server ran `what` within everyMs; `work` says whether the run is complete. */
  async function once(what: string, work: () => Promise<{ result: number; complete: boolean }>): Promise<number> {
    return lock(async () => {
      if (everyMs > 0) {
        const [last] = await sql.rows<{ at: string }>(`SELECT max(toInt64(value)) AS at FROM meta WHERE key = '${what}'`);
        if (Date.now() - Number(last?.at ?? 0) < everyMs) return 0;
      }
      const { result, complete } = await work();
      if (everyMs > 0 && complete) await sql.insert("meta", [{ key: what, value: String(Date.now()) }]);
      return result;
    });
  }

  /**
   * Marks where every slot stands now (seq_marks: a row per slot, its mark
   * naming it), then takes the marks of the last time at or before the
   * cutoff as the floor: moves they hold are dropped, offsets of snapshots
   * taken before it expire.
   */
  async function pruneHistory(cutoff: bigint): Promise<void> {
    const at = now();
    const current = await slots.marks(at);
    await sql.insert("seq_marks", [...current.marks.values()].map((mark) => ({ time: String(at), seq: String(mark) })));
    const rows = await sql.rows<{ time: string; seq: string }>(
      `SELECT time, seq FROM seq_marks WHERE time = (SELECT max(time) FROM seq_marks WHERE time <= ${sqlInt(cutoff)})`,
    );
    if (rows.length === 0) return;
    const floor: Snapshot = { marks: new Map(rows.map((r) => [slotOf(BigInt(r.seq)), BigInt(r.seq)])), at: BigInt(rows[0]!.time) };
    await sql.insert("meta", [{ key: "moves_floor", value: String(floor.at) }]);
    if (floor.at > history.floor) history.floor = floor.at;
    // Deletions run in the background (ClickHouse mutations): reads never
    // look at moves the floor holds, whether gone yet or not.
    await sql.command(layout.alter("moves", `DELETE WHERE ${heldSql("seq", floor)}`));
    await sql.command(layout.alter("seq_marks", `DELETE WHERE time < ${sqlInt(cutoff)}`));
  }

  /**
   * Drops the days (partitions of requests and lines, by creation) before
   * the cutoff's whose requests have all expired: their tombstones and lines
   * go at once, without rewriting a part.
   */
  async function dropExpiredDays(cutoff: bigint): Promise<void> {
    const days = await sql.rows<{ day: string }>(
      selectStoredAsWritten(
        `intDiv(created_at, ${sqlInt(dayUs)}) AS day`,
        `FINAL WHERE created_at < ${sqlInt((cutoff / dayUs) * dayUs)} GROUP BY day HAVING countIf(deleted = 0) = 0`,
      ),
    );
    for (const { day } of days) {
      await sql.command(layout.alter("lines", `DROP PARTITION ${sqlInt(BigInt(day))}`));
      await sql.command(layout.alter("request_keys", `DROP PARTITION ${sqlInt(BigInt(day))}`));
      await sql.command(layout.alter("positions", `DROP PARTITION ${sqlInt(BigInt(day))}`));
      await sql.command(layout.alter("search_postings", `DROP PARTITION ${sqlInt(BigInt(day))}`));
      await sql.command(layout.alter("requests", `DROP PARTITION ${sqlInt(BigInt(day))}`));
    }
  }

  return {
    expire(cutoff, limit, signal) {
      return guarded(signal, () =>
        batcher.alone(
          () =>
            once("expired_at", async () => {
              // The scan reads these columns of every request, not all of them.
              const rows = await sql.rows<RequestRow>(
                `SELECT ${tombstoneColumns} FROM ${requestsRead(`FINAL WHERE deleted = 0 AND sort_time < ${sqlInt(cutoff)}
                 ORDER BY sort_time LIMIT ${sqlInt(limit)}`)} ORDER BY sort_time`,
              );
              const result = await commit.expire(rows);
              return { result, complete: result < limit };
            }),
          signal,
        ),
      );
    },

    compact(historyCutoff, signal) {
      return guarded(signal, () =>
        batcher.alone(async () => {
          await once("compacted_at", async () => {
            await pruneHistory(historyCutoff);
            await dropExpiredDays(historyCutoff);
            return { result: 0, complete: true };
          });
        }, signal),
      );
    },
  };
}

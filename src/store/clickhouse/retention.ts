import type { Clock } from "../../clock.js";
import type { Maintenance } from "../store.js";
import type { ChangeSequence } from "./change-sequence.js";
import type { GroupCommit, GroupWork } from "./write/group-commit.js";
import type { RequestRow } from "./rows/request-row.js";
import type { PagingHistory } from "./read/snapshot-paging.js";
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
const tombstoneColumns = [
  "app", "request_id", "rkey", "created_at", "seq", "deleted", "sort_time", "finished", "module_id", "version_id",
  "has_record", "record_bytes", "line_bytes", "line_count",
  "url_map_entry", "resource", "status", "latency", "response_size", "ip", "user_agent",
].join(", ");

/**
 * Retention and compaction on ClickHouse. Expiring a request writes its
 * tombstone (a version marked deleted, its rollup share taken out) in the
 * write order, so the rollups stay exact; its lines are left behind, no
 * longer reachable (the next request of that id is a new incarnation).
 * Compaction prunes paging history as SQLite's does: it marks the sequence
 * number reached now and drops moves up to the last mark at or before the
 * cutoff; offsets from before that point expire. It then drops whole days
 * of requests (partitions) that retention has emptied.
 */
export function createClickHouseMaintenance(
  sql: SqlClient,
  layout: TableLayout,
  now: Clock,
  batcher: WriteBatcher<GroupWork>,
  commit: GroupCommit,
  seq: ChangeSequence,
  history: PagingHistory,
): Maintenance {
  async function pruneHistory(cutoff: bigint): Promise<void> {
    await sql.insert("seq_marks", [{ time: String(now()), seq: String(seq.committed) }]);
    const [mark] = await sql.rows<{ seq: string }>(
      `SELECT seq FROM seq_marks WHERE time <= ${sqlInt(cutoff)} ORDER BY time DESC, seq DESC LIMIT 1`,
    );
    if (!mark) return;
    const floor = BigInt(mark.seq);
    await sql.insert("meta", [{ key: "moves_floor", value: String(floor) }]);
    if (floor > history.floor) history.floor = floor;
    // Deletions run in the background (ClickHouse mutations): reads never
    // look at moves at or below the floor, whether gone yet or not.
    await sql.command(layout.alter("moves", `DELETE WHERE seq <= ${sqlInt(floor)}`));
    await sql.command(layout.alter("seq_marks", `DELETE WHERE time < ${sqlInt(cutoff)}`));
  }

  /**
   * Drops the days (partitions of requests and lines, by creation) before
   * the cutoff's whose requests have all expired: their tombstones and lines
   * go at once, without rewriting a part.
   */
  async function dropExpiredDays(cutoff: bigint): Promise<void> {
    const days = await sql.rows<{ day: string }>(
      `SELECT intDiv(created_at, ${sqlInt(dayUs)}) AS day FROM requests FINAL
       WHERE created_at < ${sqlInt((cutoff / dayUs) * dayUs)} GROUP BY day HAVING countIf(deleted = 0) = 0`,
    );
    for (const { day } of days) {
      await sql.command(layout.alter("lines", `DROP PARTITION ${sqlInt(BigInt(day))}`));
      await sql.command(layout.alter("positions", `DROP PARTITION ${sqlInt(BigInt(day))}`));
      await sql.command(layout.alter("requests", `DROP PARTITION ${sqlInt(BigInt(day))}`));
    }
  }

  return {
    expire(cutoff, limit, signal) {
      return guarded(signal, () =>
        batcher.alone(async () => {
          // The scan reads these columns of every request, not all of them.
          const rows = await sql.rows<RequestRow>(
            `SELECT ${tombstoneColumns} FROM requests FINAL WHERE deleted = 0 AND sort_time < ${sqlInt(cutoff)}
             ORDER BY sort_time LIMIT ${sqlInt(limit)}`,
          );
          return commit.expire(rows);
        }, signal),
      );
    },

    compact(historyCutoff, signal) {
      return guarded(signal, () =>
        batcher.alone(async () => {
          await pruneHistory(historyCutoff);
          await dropExpiredDays(historyCutoff);
        }, signal),
      );
    },
  };
}

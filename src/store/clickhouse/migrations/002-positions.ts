/**
 * Migration 002-positions: where each request stands in the newest-first
 * order, in a narrow table ordered by it. `requests` is ordered by (app,
 * request_id), so a page newest first read every row of the app (FINAL)
 * and sorted them: 1.5 s at 10M requests. ClickHouse 18.16 reads a range
 * of the key cheaply but cannot read a key in order and stop, so pages are
 * read in growing windows of sort time (snapshot-paging.ts) over this
 * table, then fetched whole by id from `requests`.
 *
 * Chosen over re-keying `requests` itself by (app, sort_time, rkey): that
 * would move every wide version when its request moves and need an id
 * table for every lookup by id (Read with request ids, the writer's loads,
 * Tail), where this table is fed by two more views and leaves the writer
 * and every lookup by id as they were (docs/benchmarks.md, fourth session).
 */
import type { TableLayout } from "../table-layout.js";
import { requestsRead } from "../rows/request-row.js";
import { byRequest, createdDay } from "./001-init.js";

/**
 * A request's position and the filters a page tests without its wide
 * columns. One row per version at the request's position (the latest,
 * highest `seq`, is the request there), and when a version moves the
 * request, a tombstone at the position it left: every position's latest row
 * is then live exactly while the request stands there, so FINAL with
 * `seq <= snapshot` is the order as it stood at a snapshot, as on
 * `requests`. Partitioned as `requests` is (retention drops the day whole)
 * and sharded by request, so every row of a position is on one shard.
 */
const positionColumns = [
  "app", "sort_time", "rkey", "seq", "deleted", "created_at", "request_id",
  "module_id", "version_id", "finished", "has_record", "max_level", "replica_index",
];

export default (t: TableLayout): string[] => [
  ...t.createTable("positions", `(
    app String,
    sort_time Int64,
    rkey UInt64,
    seq UInt64,
    deleted UInt8,                      -- 1: the request left this position (or expired) at seq
    created_at Int64,
    request_id String,
    module_id String,
    version_id String,
    finished UInt8,
    has_record UInt8,
    max_level Int8,
    replica_index Int32
  ) ENGINE = ReplacingMergeTree(seq) PARTITION BY ${createdDay} ORDER BY (app, sort_time, rkey)`, byRequest),

  // Each version at its position, and a tombstone where a move left. (Named
  // to run after request_changes_4_requests, the views running in the order
  // of their names: a reader who sees a position finds its version (and its
  // move) stored, so a record a group being inserted moves away is found
  // among the changes. Two views, not one ARRAY JOIN: an alias may not share
  // a name with a column it is made from.)
  ...t.createView("request_changes_5_positions", "positions", (from) => `
    SELECT ${positionColumns.join(", ")} FROM ${from("request_changes")}`),

  ...t.createView("request_changes_5_positions_left", "positions", (from) => `
    SELECT ${positionColumns.map((c) => (c === "sort_time" ? "prev_sort_time AS sort_time" : c === "deleted" ? "toUInt8(1) AS deleted" : c)).join(", ")}
    FROM ${from("request_changes")} WHERE moved = 1`),

  // The positions of the requests stored before this migration (each at its
  // latest version's, which has no older position to leave behind). Run
  // again after a cut, it writes the same rows, which FINAL takes once.
  // (Through requestsRead: rkey as written, in whichever form a row keeps it.)
  `INSERT INTO positions (${positionColumns.join(", ")})
   SELECT ${positionColumns.join(", ")} FROM ${requestsRead("FINAL WHERE deleted = 0")}`,
];

/**
 * Migration 001-init: applied in order by migrate.ts (embedded in the build,
 * so dist/ runs alone). One statement per entry (ClickHouse's HTTP interface
 * takes one at a time), written through the table layout (one server or a
 * cluster, table-layout.ts); each is IF NOT EXISTS, so a migration cut short
 * runs again whole. Written for ClickHouse 18.16 and later: no codecs, TTL or
 * skip indexes.
 */
import type { TableLayout } from "../table-layout.js";

/**
 * A request's columns as `requests` keeps them. One row per version: the
 * latest (highest `seq`) is the request; ReplacingMergeTree drops the others
 * when it merges, and every read uses FINAL, so a read never sees two. No
 * Nullable columns and the rarely set fields in one JSON column: 18.16
 * writes two files per column (four per Nullable) for every insert.
 */
export const requestColumns = `
  app String,
  request_id String,                  -- the id's bytes, one latin1 character each
  rkey UInt64,                        -- seq of the write that created this request: the paging tie-break and its lines' owner
  created_at Int64,                   -- server time of that write (µs): the request's partition, with its lines
  seq UInt64,                         -- the change that wrote this version (change sequence number)
  deleted UInt8,                      -- 1: expired by retention (a tombstone version)
  has_record UInt8,                   -- 0 while only flushed lines have arrived
  finished UInt8,                     -- the effective value (proto default true)
  sort_time Int64,                    -- end_time if finished, else updated_at (µs)
  updated_at Int64,                   -- server time of the last write or flush (µs)
  module_id String,
  version_id String,
  max_level Int8,                     -- highest app line level, -1 without lines
  line_count UInt64,
  line_bytes UInt64,                  -- serialized size of its lines inside a RequestLog
  record_bytes UInt64,                -- serialized size of the record without lines (0 until it arrives)
  combined String,                    -- the combined line as read back (given, or derived when written)
  set_fields UInt64,                  -- bit n: the RequestLog field numbered n was set
  extra String,                       -- set fields without a column below, as JSON ('' when none)
  ip String,                          -- the fields below hold their proto default when unset
  start_time Int64,
  end_time Int64,
  latency Int64,
  mcycles Int64,
  method String,
  resource String,
  http_version String,
  status Int32,
  response_size Int64,
  referrer String,
  user_agent String,
  url_map_entry String,
  host String,
  replica_index Int32`;

/** What request_changes carries of a change besides the row: where it stood, its new lines. */
export const changeColumns = `
    moved UInt8,
    prev_sort_time Int64,
    line_time Array(Int64),
    line_pos Array(UInt32),
    line_level Array(Int8),
    line_message Array(String)`;

export const columnNames = requestColumns
  .split("\n")
  .map((line) => line.trim().split(" ")[0]!)
  .filter((name) => name !== "");

/**
 * Requests and their lines are partitioned by the day they were created
 * (every version of a request, and each of its lines, in one partition, as
 * FINAL needs): once retention has expired every request of a day, the day
 * goes whole (retention.ts), lines and tombstones with it.
 */
export const createdDay = "intDiv(created_at, 86400000000)";

/** A request's rows (its versions, lines and changes) are on one shard. */
export const byRequest = "cityHash64(app, request_id)";
/** Rows only ever summed or merged, wherever they are. */
const anywhere = "rand()";

export default (t: TableLayout): string[] => [
  ...t.createTable("requests", `(${requestColumns}
  ) ENGINE = ReplacingMergeTree(seq) PARTITION BY ${createdDay} ORDER BY (app, request_id)`, byRequest),

  // App log lines of a request (of one incarnation: rkey), each stored once.
  // The key makes a line sent again (same time, position, level, message) one
  // row after a merge; the writer stores only lines it has not seen.
  ...t.createTable("lines", `(
    app String,
    request_id String,
    rkey UInt64,
    created_at Int64,
    time Int64,
    pos UInt32,
    level Int8,
    message String
  ) ENGINE = ReplacingMergeTree PARTITION BY ${createdDay} ORDER BY (app, request_id, rkey, time, pos, level, message)`, byRequest),

  // Where a request stood in the newest-first order before the change \`seq\`
  // moved it: a paged Read puts a record changed since its first page where
  // it stood then.
  ...t.createTable("moves", `(app String, rkey UInt64, seq UInt64, old_sort_time Int64)
    ENGINE = MergeTree ORDER BY (app, seq, rkey)`, anywhere),

  // Usage rollups: per app, hour of the sort time and version, the records,
  // bytes and lines. Every change adds its new share and takes its old share
  // out, so the sums always equal a recount; merges add rows up (and drop
  // those that sum to zero), reads GROUP BY.
  ...t.createTable("usage_hourly", `(app String, hour Int64, version_id String, requests Int64, bytes Int64, lines Int64)
    ENGINE = SummingMergeTree ORDER BY (app, hour, version_id)`, anywhere),

  // Stats rollups: what finished requests add up to per app and hour of their
  // end time, by route, version, status class, user agent (so that a bot
  // pattern can leave agents out) and latency bucket
  // (src/domain/latency-histogram.ts): requests, server errors, bytes sent
  // and the largest latency added (an upper bound once one is taken out).
  ...t.createTable("stats_hourly", `(
    app String,
    hour Int64,
    route String,
    module String,
    version String,
    status_class UInt8,
    agent String,
    bucket UInt16,
    requests AggregateFunction(sum, Int64),
    errors AggregateFunction(sum, Int64),
    bytes AggregateFunction(sum, Int64),
    max_latency AggregateFunction(max, Int64)
  ) ENGINE = AggregatingMergeTree ORDER BY (app, hour, route, module, version, status_class, agent, bucket)`, anywhere),

  // The requests and server errors of each client IP (kind 0) and user agent (kind 1) per app and hour.
  ...t.createTable("stats_clients", `(app String, hour Int64, kind UInt8, name String, requests Int64, errors Int64)
    ENGINE = SummingMergeTree ORDER BY (app, hour, kind, name)`, anywhere),

  // What the writer inserts: a request version, its new lines, its share of
  // the rollups before and after, and where it stood. It stores nothing
  // itself; the views below split each insert into the tables above, so a
  // batch is one INSERT that ClickHouse applies whole or not at all (short
  // of a failure inside a view).
  ...t.createTable("request_changes", `(${requestColumns},
    share_hour Int64,
    share_version_id String,
    share_requests Int64,
    share_bytes Int64,
    share_lines Int64,
    prev_hour Int64,
    prev_version_id String,
    prev_requests Int64,
    prev_bytes Int64,
    prev_lines Int64,
    ${changeColumns},
    stats_sign Array(Int8),             -- the Stats cells it leaves (-1) and joins (+1)
    stats_hour Array(Int64),
    stats_route Array(String),
    stats_module Array(String),
    stats_version Array(String),
    stats_class Array(UInt8),
    stats_agent Array(String),
    stats_bucket Array(UInt16),
    stats_error Array(UInt8),
    stats_latency Array(Int64),
    stats_bytes Array(Int64),
    client_sign Array(Int8),            -- the client IPs and user agents it counts for (-1, +1)
    client_hour Array(Int64),
    client_kind Array(UInt8),
    client_name Array(String),
    client_error Array(UInt8)
  ) ENGINE = Null`, byRequest),

  ...t.createView("request_changes_1_lines", "lines", (from) => `
    SELECT app, request_id, rkey, created_at, time, pos, level, message FROM ${from("request_changes")}
    ARRAY JOIN line_time AS time, line_pos AS pos, line_level AS level, line_message AS message`),

  ...t.createView("request_changes_2_moves", "moves", (from) => `
    SELECT app, rkey, seq, prev_sort_time AS old_sort_time FROM ${from("request_changes")} WHERE moved = 1`),

  // (share_version_id repeats version_id: an alias may not share a name with a column it is made from.)
  ...t.createView("request_changes_3_usage", "usage_hourly", (from) => `
    SELECT app, tupleElement(u, 1) AS hour, tupleElement(u, 2) AS version_id,
      tupleElement(u, 3) AS requests, tupleElement(u, 4) AS bytes, tupleElement(u, 5) AS lines
    FROM ${from("request_changes")}
    ARRAY JOIN [
      (share_hour, share_version_id, share_requests, share_bytes, share_lines),
      (prev_hour, prev_version_id, -prev_requests, -prev_bytes, -prev_lines)] AS u
    WHERE requests != 0 OR bytes != 0 OR lines != 0`),

  ...t.createView("request_changes_3_stats", "stats_hourly", (from) => `
    SELECT app, hour, route, module, version, status_class, agent, bucket,
      sumState(toInt64(sign)) AS requests, sumState(toInt64(sign * error)) AS errors,
      sumState(toInt64(sign * size)) AS bytes, maxState(if(sign > 0, lat, toInt64(0))) AS max_latency
    FROM ${from("request_changes")}
    ARRAY JOIN stats_sign AS sign, stats_hour AS hour, stats_route AS route, stats_module AS module,
      stats_version AS version, stats_class AS status_class, stats_agent AS agent, stats_bucket AS bucket,
      stats_error AS error, stats_latency AS lat, stats_bytes AS size
    GROUP BY app, hour, route, module, version, status_class, agent, bucket`),

  ...t.createView("request_changes_3_clients", "stats_clients", (from) => `
    SELECT app, hour, kind, name, toInt64(sign) AS requests, toInt64(sign * error) AS errors
    FROM ${from("request_changes")}
    ARRAY JOIN client_sign AS sign, client_hour AS hour, client_kind AS kind, client_name AS name, client_error AS error`),

  // Views run in the order of their names (ClickHouse keeps them sorted):
  // this one last, so that a reader who sees a version finds its lines,
  // move and rollup share already stored.
  ...t.createView("request_changes_4_requests", "requests", (from) => `
    SELECT ${columnNames.join(", ")} FROM ${from("request_changes")}`),

  // Settings of the database: the offsets' key, how far paging history was pruned.
  ...t.createTable("meta", `(
    key String,
    value String
  ) ENGINE = MergeTree ORDER BY key`, anywhere),

  // The change sequence number reached at points in time (one per compaction),
  // so that paging history can be pruned by age.
  ...t.createTable("seq_marks", `(
    time Int64,
    seq UInt64
  ) ENGINE = MergeTree ORDER BY time`, anywhere),

  // The latest status text of each instance (SetStatus).
  ...t.createTable("statuses", `(
    app_id String,
    module_id String,
    version_id String,
    instance_id String,
    status String,
    time Int64,
    seq UInt64
  ) ENGINE = ReplacingMergeTree(seq) ORDER BY (app_id, module_id, version_id, instance_id)`, "cityHash64(app_id, module_id, version_id, instance_id)"),

  // Access tokens, written rql_<key id>_<secret>; only a SHA-256 of each is kept.
  // A revocation is a second version of the row.
  ...t.createTable("tokens", `(
    id UInt64,
    key_id String,
    hash String,
    name String,
    scopes String,
    apps Nullable(String),
    created Int64,
    revoked Nullable(Int64),
    version UInt8
  ) ENGINE = ReplacingMergeTree(version) ORDER BY id`, "id"),
];

/**
 * Migration 003-group-rollups: the rollups' shares summed in Node per group
 * (rollup-deltas.ts) instead of two entries per change summed by the views.
 * At 1,000 records a call, request_changes' views wrote two Usage rows, two
 * Stats cells and four client rows per request (a GROUP BY of eight columns
 * over them), which merges then added up again; now an insert carries one
 * entry per (hour, version), Stats cell and client that moved, on each app's
 * last rows of the group (on a cluster, each request's: request-writer.ts
 * changesText), still in the same INSERT as the rows.
 *
 * request_changes stores nothing (ENGINE = Null), so it is dropped and made
 * again with the new columns; the views that read it by name (requests,
 * positions, lines, moves) keep firing on the new table. The three rollup views are
 * made again under their names, so they still run before requests'. Every
 * statement is IF EXISTS or IF NOT EXISTS: a migration cut short runs again
 * whole. The rollup tables themselves are unchanged, and what they hold
 * stays (a database of 001 reads the same after it).
 */
import type { TableLayout } from "../table-layout.js";
import { byRequest, changeColumns, requestColumns } from "./001-init.js";

const rollupViews = ["request_changes_3_usage", "request_changes_3_stats", "request_changes_3_clients"];

export default (t: TableLayout): string[] => [
  ...rollupViews.map((name) => t.dropView(name)),
  ...t.dropTable("request_changes"),

  // A request version, its new lines and where it stood, as in 001; and on
  // the last rows of each app in a group (or of each request, on a cluster),
  // what they move in the rollups.
  ...t.createTable("request_changes", `(${requestColumns},${changeColumns},
    usage_hour Array(Int64),            -- usage_hourly's (hour, version) keys that moved, and by how much
    usage_version Array(String),
    usage_requests Array(Int64),
    usage_bytes Array(Int64),
    usage_lines Array(Int64),
    stats_hour Array(Int64),            -- stats_hourly's cells that moved, by how much, and the largest latency added
    stats_route Array(String),
    stats_module Array(String),
    stats_version Array(String),
    stats_class Array(UInt8),
    stats_agent Array(String),
    stats_bucket Array(UInt16),
    stats_requests Array(Int64),
    stats_errors Array(Int64),
    stats_bytes Array(Int64),
    stats_max_latency Array(Int64),
    client_hour Array(Int64),           -- stats_clients' client IPs (kind 0) and user agents (kind 1) that moved
    client_kind Array(UInt8),
    client_name Array(String),
    client_requests Array(Int64),
    client_errors Array(Int64)
  ) ENGINE = Null`, byRequest),

  // (An ARRAY JOIN alias may not be the name of a column: usage_version goes through uv.)
  ...t.createView("request_changes_3_usage", "usage_hourly", (from) => `
    SELECT app, hour, uv AS version_id, requests, bytes, lines
    FROM ${from("request_changes")}
    ARRAY JOIN usage_hour AS hour, usage_version AS uv, usage_requests AS requests, usage_bytes AS bytes, usage_lines AS lines`),

  // Each cell comes once per app and insert; the GROUP BY only makes its states.
  ...t.createView("request_changes_3_stats", "stats_hourly", (from) => `
    SELECT app, hour, route, module, version, status_class, agent, bucket,
      sumState(r) AS requests, sumState(e) AS errors, sumState(b) AS bytes, maxState(mx) AS max_latency
    FROM ${from("request_changes")}
    ARRAY JOIN stats_hour AS hour, stats_route AS route, stats_module AS module, stats_version AS version,
      stats_class AS status_class, stats_agent AS agent, stats_bucket AS bucket,
      stats_requests AS r, stats_errors AS e, stats_bytes AS b, stats_max_latency AS mx
    GROUP BY app, hour, route, module, version, status_class, agent, bucket`),

  ...t.createView("request_changes_3_clients", "stats_clients", (from) => `
    SELECT app, hour, kind, name, requests, errors
    FROM ${from("request_changes")}
    ARRAY JOIN client_hour AS hour, client_kind AS kind, client_name AS name, client_requests AS requests, client_errors AS errors`),
];

/** Migration 004-stats: applied in order by open-database.ts (embedded in the build, so dist/ runs alone). */
export default /* sql */ `
-- Stats rollups: what finished requests add up to per app and hour of their
-- sort time (end_time), moved in the same transaction as every change to
-- the rows they count (stats-rollups.ts), so they always equal a recount;
-- Stats reads only these.
--
-- The routes, user agents and client IPs of each app and hour. At most 1000
-- distinct names of each kind get a row of their own in an hour; the
-- requests of the names beyond that count in the kind's overflow row (name
-- NULL). A name keeps its row while its hour counts any request, so each
-- name's requests are all in its own row or all in the overflow row.
CREATE TABLE stats_names (
  id INTEGER PRIMARY KEY,
  app_key INTEGER NOT NULL,
  kind INTEGER NOT NULL,             -- 0 route, 1 user agent, 2 client IP
  hour INTEGER NOT NULL,             -- hours since the epoch
  name TEXT,                         -- NULL: the overflow row
  requests INTEGER NOT NULL,
  errors INTEGER NOT NULL            -- status 500 to 599
);
CREATE UNIQUE INDEX stats_names_by_name ON stats_names (app_key, kind, hour, name);

-- Per app, hour, route, version and status class: requests, bytes sent (the
-- sum of response_size), the largest latency added, and a latency histogram
-- (src/domain/latency-histogram.ts buckets, as varint pairs: bucket index
-- delta, count).
CREATE TABLE stats_hourly (
  app_key INTEGER NOT NULL,
  hour INTEGER NOT NULL,
  route_key INTEGER NOT NULL,        -- stats_names.id of the route (this app and hour)
  version_key INTEGER NOT NULL,
  status_class INTEGER NOT NULL,     -- 1 to 5 for 1xx to 5xx, 0 for other statuses
  requests INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  max_latency INTEGER NOT NULL,      -- µs; may be above the true max after a removal
  latency BLOB NOT NULL,
  PRIMARY KEY (app_key, hour, route_key, version_key, status_class)
) WITHOUT ROWID;

-- The same split by user agent (those with a row of their own), for the bot
-- filter: Stats takes the rows of the user agents a pattern matches out of
-- stats_hourly's.
CREATE TABLE stats_agents_hourly (
  agent_key INTEGER NOT NULL,        -- stats_names.id of the user agent (one app and hour)
  route_key INTEGER NOT NULL,
  version_key INTEGER NOT NULL,
  status_class INTEGER NOT NULL,
  requests INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  latency BLOB NOT NULL,
  PRIMARY KEY (agent_key, route_key, version_key, status_class)
) WITHOUT ROWID;

-- The requests stored before this migration are counted into the new
-- rollups once, when the backend next opens (rollups.ts), then this goes.
INSERT INTO meta (key, value) VALUES ('stats_backfill', 1);
`;

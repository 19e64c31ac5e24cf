/** Migration 005-stats-levels: applied in order by open-database.ts (embedded in the build, so dist/ runs alone). */
export default /* sql */ `
-- Stats rollups at the levels the questions are asked at, replacing 004's
-- (one table per hour, route, version and status class, and a row per client
-- IP and hour, which a month's Stats had to read by the hundred thousand).
-- Every table is kept equal to a recount of the finished requests, moved in
-- the same transaction as each change to the rows it counts
-- (stats-rollups.ts); Stats reads the coarsest one that answers a question
-- exactly (sqlite-stats.ts). The requests stored so far are counted into
-- them once, when the backend next opens (rollups.ts).
DROP TABLE stats_agents_hourly;
DROP TABLE stats_hourly;
DROP TABLE stats_names;

-- The routes and user agents of each app and hour, and the routes of each
-- day. At most 1000 distinct names of a kind get a row of their own in an
-- hour; the requests of the others count under the kind's overflow row (name
-- NULL). A name keeps its row while its hour counts any request, so each
-- name's requests of an hour are all in its own row or all in the overflow
-- row. A route has a row in a day when it has its own row in any hour of it
-- (the overflow rows of the hours count under the day's).
CREATE TABLE stats_names (
  id INTEGER PRIMARY KEY,
  app_key INTEGER NOT NULL,
  kind INTEGER NOT NULL,             -- 0 route (hour), 1 user agent (hour), 2 route (day)
  hour INTEGER NOT NULL,             -- hours since the epoch; a day: its first hour
  name TEXT                          -- NULL: the overflow row
);
CREATE UNIQUE INDEX stats_names_by_name ON stats_names (app_key, kind, hour, name);

-- The cells: requests, bytes sent (the sum of response_size), the largest
-- latency added (µs; it may be above the true max after a removal) and a
-- latency histogram (src/domain/latency-histogram.ts buckets, as varint
-- pairs: bucket index delta, count). Status class: 1 to 5 for 1xx to 5xx, 0
-- for other statuses. A route_key is a stats_names id of the cell's hour
-- (day, in stats_route_days).
--
-- Per version, route and class: for calls that filter or split by version.
CREATE TABLE stats_version_hours (
  app_key INTEGER NOT NULL,
  version_key INTEGER NOT NULL,
  hour INTEGER NOT NULL,
  route_key INTEGER NOT NULL,
  status_class INTEGER NOT NULL,
  requests INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  max_latency INTEGER NOT NULL,
  latency BLOB NOT NULL,
  PRIMARY KEY (app_key, version_key, hour, route_key, status_class)
) WITHOUT ROWID;

-- Versions merged: per route and class.
CREATE TABLE stats_route_hours (
  app_key INTEGER NOT NULL,
  hour INTEGER NOT NULL,
  route_key INTEGER NOT NULL,
  status_class INTEGER NOT NULL,
  requests INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  max_latency INTEGER NOT NULL,
  latency BLOB NOT NULL,
  PRIMARY KEY (app_key, hour, route_key, status_class)
) WITHOUT ROWID;

-- Every request of the hour: the time series (each class's requests are
-- stats_class_hours' requests).
CREATE TABLE stats_hours (
  app_key INTEGER NOT NULL,
  hour INTEGER NOT NULL,
  requests INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  max_latency INTEGER NOT NULL,
  latency BLOB NOT NULL,
  PRIMARY KEY (app_key, hour)
) WITHOUT ROWID;

-- Versions and routes merged: per class.
CREATE TABLE stats_class_hours (
  app_key INTEGER NOT NULL,
  hour INTEGER NOT NULL,
  status_class INTEGER NOT NULL,
  requests INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  max_latency INTEGER NOT NULL,
  latency BLOB NOT NULL,
  PRIMARY KEY (app_key, hour, status_class)
) WITHOUT ROWID;

-- Versions merged, per route and class, per day (UTC): the whole days of a
-- long range.
CREATE TABLE stats_route_days (
  app_key INTEGER NOT NULL,
  hour INTEGER NOT NULL,             -- the day's first hour
  route_key INTEGER NOT NULL,
  status_class INTEGER NOT NULL,
  requests INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  max_latency INTEGER NOT NULL,
  latency BLOB NOT NULL,
  PRIMARY KEY (app_key, hour, route_key, status_class)
) WITHOUT ROWID;

-- stats_version_hours split by user agent (those with a row of their own),
-- for the bot filter: Stats takes the rows of the user agents a pattern
-- matches out of the cells it reads.
CREATE TABLE stats_agent_hours (
  agent_key INTEGER NOT NULL,        -- stats_names id of the user agent (one app and hour)
  route_key INTEGER NOT NULL,
  version_key INTEGER NOT NULL,
  status_class INTEGER NOT NULL,
  requests INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  latency BLOB NOT NULL,
  PRIMARY KEY (agent_key, route_key, version_key, status_class)
) WITHOUT ROWID;

-- The client IPs and user agents with the most requests of each app and hour
-- and day: a bounded summary each (src/domain/top-names.ts, encoded by
-- top-names-blob.ts), exact while the period has at most 100 distinct names.
CREATE TABLE stats_top_names (
  app_key INTEGER NOT NULL,
  kind INTEGER NOT NULL,             -- 0 client IP, 1 user agent
  hours INTEGER NOT NULL,            -- the period: 1 (an hour) or 24 (a day)
  hour INTEGER NOT NULL,             -- its first hour
  requests INTEGER NOT NULL,         -- the period's requests (the row goes when they reach 0)
  version INTEGER NOT NULL,          -- new with every write of the summary (readers keep them decoded)
  summary BLOB NOT NULL,
  PRIMARY KEY (app_key, kind, hours, hour)
) WITHOUT ROWID;

INSERT OR REPLACE INTO meta (key, value) VALUES ('stats_backfill', 1);
`;

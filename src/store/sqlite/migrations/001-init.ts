/** Migration 001-init: applied in order by open-database.ts (embedded in the build, so dist/ runs alone). */
export default /* sql */ `
-- Apps and their (module, version) pairs are interned: every request row
-- carries two small integers instead of three strings.
--
-- Relations (versions.app_key → apps, requests.app_key/version_key → apps/
-- versions, lines.request_key and moves.request_key → requests) are kept by
-- the store's code, not declared as foreign keys: SQLite would check them on
-- every line inserted, which costs more than the rest of the insert.
CREATE TABLE apps (
  id INTEGER PRIMARY KEY,
  app_id TEXT NOT NULL UNIQUE
);

CREATE TABLE versions (
  id INTEGER PRIMARY KEY,
  app_key INTEGER NOT NULL,
  module_id TEXT NOT NULL,
  version_id TEXT NOT NULL,
  UNIQUE (app_key, module_id, version_id)
);

-- One row per (app, request_id). Optional RequestLog fields are NULL when the
-- writer left them unset, so they read back unset. \`combined\` is NULL when it
-- equals the line derived from the other fields (re-derived on read).
CREATE TABLE requests (
  id INTEGER PRIMARY KEY,            -- stable unique key: the paging tie-break
  app_key INTEGER NOT NULL,
  version_key INTEGER NOT NULL,
  request_id BLOB NOT NULL,
  has_record INTEGER NOT NULL,       -- 0 while only flushed lines have arrived
  finished INTEGER NOT NULL,         -- the effective value (proto default true)
  sort_time INTEGER NOT NULL,        -- end_time if finished, else updated_at
  updated_at INTEGER NOT NULL,       -- server time of the last write or flush
  seq INTEGER NOT NULL,              -- change sequence number of the last change
  created_seq INTEGER NOT NULL,      -- change sequence number of the insert
  max_level INTEGER,                 -- highest app line level, NULL without lines
  record_bytes INTEGER NOT NULL,     -- serialized size of the record without lines (0 until it arrives)
  line_count INTEGER NOT NULL DEFAULT 0,
  line_bytes INTEGER NOT NULL DEFAULT 0, -- serialized size of its lines inside a RequestLog
  module_set INTEGER NOT NULL,       -- module_id was set explicitly
  finished_set INTEGER,              -- finished as written, NULL when unset
  ip TEXT NOT NULL,
  nickname TEXT,
  start_time INTEGER NOT NULL,
  end_time INTEGER NOT NULL,
  latency INTEGER NOT NULL,
  mcycles INTEGER NOT NULL,
  method TEXT NOT NULL,
  resource TEXT NOT NULL,
  http_version TEXT NOT NULL,
  status INTEGER NOT NULL,
  response_size INTEGER NOT NULL,
  referrer TEXT,
  user_agent TEXT,
  url_map_entry TEXT NOT NULL,
  combined TEXT,
  api_mcycles INTEGER,
  host TEXT,
  cost REAL,
  task_queue_name TEXT,
  task_name TEXT,
  was_loading_request INTEGER,
  pending_time INTEGER,
  replica_index INTEGER,
  clone_key BLOB,
  lines_incomplete INTEGER,
  platform_release BLOB,
  exit_reason INTEGER,
  was_throttled_for_time INTEGER,
  was_throttled_for_requests INTEGER,
  throttled_time INTEGER,
  server_name BLOB
);

CREATE UNIQUE INDEX requests_by_request_id ON requests (app_key, request_id);
-- Newest first by sort time, \`id\` as the tie-break: the Read path's keyset order.
CREATE INDEX requests_by_time ON requests (app_key, sort_time, id);
-- Records changed since a sequence number: Tail, and paging from a snapshot.
CREATE INDEX requests_by_seq ON requests (app_key, seq);

-- Where a record stood in the newest-first order before a change moved it.
-- A paged Read positions every record where it stood when its first page was
-- read (the offset's snapshot), so a record updated between pages is neither
-- skipped nor repeated.
CREATE TABLE moves (
  request_key INTEGER NOT NULL,
  seq INTEGER NOT NULL,              -- the change that moved the record
  old_sort_time INTEGER NOT NULL,
  PRIMARY KEY (request_key, seq)
) WITHOUT ROWID;
CREATE INDEX moves_by_seq ON moves (seq);

-- App log lines. The key makes a re-sent line (same request, time, position in
-- its flush, level and message) a no-op, so retried flushes are not doubled.
CREATE TABLE lines (
  request_key INTEGER NOT NULL,
  time INTEGER NOT NULL,
  pos INTEGER NOT NULL,
  level INTEGER NOT NULL,
  message TEXT NOT NULL,
  PRIMARY KEY (request_key, time, pos, level, message)
) WITHOUT ROWID;

-- Usage rollups: per app, hour of the sort time and version, the request
-- records, their bytes (records and lines, as serialized in a RequestLog) and
-- their app lines. Kept in the same transaction as every change to the rows
-- they count, so they always equal a recount; Usage reads only these.
CREATE TABLE usage_hourly (
  app_key INTEGER NOT NULL,
  hour INTEGER NOT NULL,             -- hours since the epoch
  version_key INTEGER NOT NULL,
  requests INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  lines INTEGER NOT NULL,
  PRIMARY KEY (app_key, hour, version_key)
) WITHOUT ROWID;

-- The latest status text of each instance (SetStatus).
CREATE TABLE statuses (
  app_id TEXT NOT NULL,
  module_id TEXT NOT NULL,
  version_id TEXT NOT NULL,
  instance_id TEXT NOT NULL,
  status TEXT NOT NULL,
  time INTEGER NOT NULL,
  PRIMARY KEY (app_id, module_id, version_id, instance_id)
) WITHOUT ROWID;
`;

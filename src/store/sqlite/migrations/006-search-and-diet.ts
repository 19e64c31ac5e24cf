/**
 * Migration 006-search-and-diet: the search index and the storage diet
 * (docs/search-index.md). Applied in order by open-database.ts, like the
 * others; this one is code, not only SQL, because every stored request is
 * re-encoded (strings to keys, lines to one blob per request, rarely set
 * fields packed) by the same functions the writer uses, and indexed.
 */
import { type DescField, ScalarType } from "@bufbuild/protobuf";
import type Database from "better-sqlite3";
import { type RequestLog, RequestLogSchema } from "../../../../gen/reqlog/v1/log_service_pb.js";
import type { AppLine } from "../../../domain/records.js";
import { encodeLines } from "../rows/line-blob.js";
import { createSearchIndex, docColumnsOf } from "../rows/search-doc.js";
import { fieldColumns, identityOf, recordValues } from "../rows/stored-record.js";
import { createStrings } from "../rows/strings.js";

export const schema006 = /* sql */ `
-- Repetitive strings, stored once; rows carry their key (strings.ts).
CREATE TABLE strings (
  id INTEGER PRIMARY KEY,
  kind INTEGER NOT NULL,             -- 0 method, 1 HTTP version, 2 referrer, 3 user agent, 4 host, 5 url map entry, 6 resource start
  text TEXT NOT NULL,
  UNIQUE (kind, text)
);
-- Referrers and user agents by the trigrams of their text: which entries a
-- piece of a pattern is in (search-query.ts). Contentless: text is in strings.
CREATE VIRTUAL TABLE strings_search USING fts5(
  text, content='', columnsize=0, detail=none, tokenize='trigram case_sensitive 1');

-- The search index of request records (search-doc.ts): candidates for a
-- regex Read, which RE2 then decides. A document is the tokens of its
-- trigrams (hex) and string entries, so the writer decides what is indexed;
-- contentless: a document is taken out by giving its tokens again.
CREATE VIRTUAL TABLE request_search USING fts5(
  doc, content='', columnsize=0, detail=none, tokenize='ascii');
-- Grams not indexed in the documents of rows from \`since\` on (stop-grams.ts).
CREATE TABLE search_stopgrams (
  gram TEXT PRIMARY KEY,
  since INTEGER NOT NULL
) WITHOUT ROWID;

-- One row per (app, request_id), as stored-record.ts encodes it.
CREATE TABLE requests_006 (
  id INTEGER PRIMARY KEY,            -- the change sequence number of its insert: the paging tie-break
  app_key INTEGER NOT NULL,
  version_key INTEGER NOT NULL,
  request_id BLOB NOT NULL,
  has_record INTEGER NOT NULL,       -- 0 while only flushed lines have arrived
  finished INTEGER NOT NULL,         -- the effective value (proto default true)
  sort_time INTEGER NOT NULL,        -- end_time if finished, else the server time of the last write or flush
  seq INTEGER,                       -- change sequence number of the last change; NULL: its insert (id)
  max_level INTEGER,                 -- highest app line level, NULL without lines
  record_bytes INTEGER NOT NULL,     -- serialized size of the record without lines (0 until it arrives)
  line_count INTEGER NOT NULL,
  line_bytes INTEGER NOT NULL,       -- serialized size of its lines inside a RequestLog
  module_set INTEGER NOT NULL,       -- module_id was set explicitly
  finished_set INTEGER,              -- finished as written, NULL when unset
  ip NOT NULL,                       -- a dotted IPv4 address as an integer, any other as text
  nickname TEXT,
  start_time INTEGER,                -- NULL: end_time − latency
  end_time INTEGER,                  -- NULL: sort_time (a finished request)
  latency INTEGER NOT NULL,
  mcycles INTEGER NOT NULL,
  method INTEGER,                    -- strings key; NULL: ""
  resource_prefix INTEGER,           -- strings key of the resource's constant start; NULL: none
  resource TEXT NOT NULL,            -- the rest of the resource
  http_version INTEGER,              -- strings key; NULL: ""
  status INTEGER NOT NULL,
  response_size INTEGER NOT NULL,
  referrer INTEGER,                  -- strings key; NULL: unset
  user_agent INTEGER,                -- strings key; NULL: unset
  url_map_entry INTEGER,             -- strings key; NULL: ""
  host INTEGER,                      -- strings key; NULL: unset
  combined TEXT,                     -- NULL: the line formatCombined derives
  replica_index INTEGER,
  extras BLOB,                       -- the other fields set, protobuf wire format
  lines BLOB                         -- the app lines (line-blob.ts)
);
`;

export const indexes006 = /* sql */ `
CREATE UNIQUE INDEX requests_by_request_id ON requests (app_key, request_id);
-- Newest first by sort time, the row id (implied in every index) as the
-- tie-break: the Read path's keyset order.
CREATE INDEX requests_by_time ON requests (app_key, sort_time);

-- Every change to a row after its insert, with where the row stood before
-- it. Rows changed after a sequence number are the rows inserted after it
-- (id) and these (Tail); a paged Read positions a row changed since its
-- snapshot where it stood then (its first update after the snapshot).
-- Pruned by age with the paging history.
CREATE TABLE updates (
  seq INTEGER PRIMARY KEY,
  request_key INTEGER NOT NULL,
  old_sort_time INTEGER NOT NULL
);
`;

/** Migration 004's `requests` columns of RequestLog fields, read back as that version's rowToRequestLog did. */
function rowOf004(row: Record<string, unknown>): RequestLog {
  const log = identityOf(row);
  const fields = log as unknown as Record<string, unknown>;
  for (const field of RequestLogSchema.fields as readonly DescField[]) {
    if (field.fieldKind !== "scalar" || !(field.name in row) || field.name === "finished") continue;
    const value = row[field.name];
    if (value === null || value === undefined) continue;
    switch (field.scalar) {
      case ScalarType.BOOL:
        fields[field.localName] = value !== 0n;
        break;
      case ScalarType.BYTES:
        fields[field.localName] = new Uint8Array(value as Buffer);
        break;
      case ScalarType.INT32:
      case ScalarType.DOUBLE:
        fields[field.localName] = Number(value);
        break;
      default:
        fields[field.localName] = value;
    }
  }
  return log;
}

/** Re-encodes every stored request into the new `requests`, indexes it, and drops what it replaces. */
export function migrate006(db: Database.Database): void {
  db.exec(schema006);
  const strings = createStrings(db);
  const page = db
    .prepare(
      `SELECT r.*, a.app_id, v.module_id, v.version_id FROM requests r
       JOIN apps a ON a.id = r.app_key JOIN versions v ON v.id = r.version_key
       WHERE r.id > ? ORDER BY r.id LIMIT 2000`,
    )
    .safeIntegers(true);
  const linesOf = db
    .prepare("SELECT time, pos, level, message FROM lines WHERE request_key = ? ORDER BY time, pos, level, message")
    .safeIntegers(true);
  const columns = [
    "id", "app_key", "version_key", "request_id", "has_record", "finished", "sort_time", "seq", "max_level",
    "record_bytes", "line_count", "line_bytes", "module_set", "finished_set", ...fieldColumns, "lines",
  ];
  const insert = db.prepare(`INSERT INTO requests_006 (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`);
  const search = createSearchIndex(db, strings);
  // Stop grams learned here apply to rows written after the migration.
  const nextId = BigInt(db.prepare("SELECT value FROM meta WHERE key = 'seq'").pluck().get() as number) + 1n;
  for (let after = 0n; ; ) {
    const rows = page.all(after) as Record<string, unknown>[];
    if (rows.length === 0) break;
    for (const row of rows) {
      const lines = (linesOf.all(row.id) as Record<string, bigint | string>[]).map(
        (l): AppLine => ({ time: l.time as bigint, pos: Number(l.pos), level: Number(l.level), message: l.message as string }),
      );
      const id = row.created_seq as bigint;
      const seq = row.seq === row.created_seq ? null : row.seq;
      const head = [
        id, row.app_key, row.version_key, row.request_id, row.has_record, row.finished, row.sort_time, seq, row.max_level,
        row.record_bytes, row.line_count, row.line_bytes, row.module_set, row.finished_set,
      ];
      let fields: unknown[];
      if (row.has_record === 1n) {
        const log = rowOf004(row);
        fields = recordValues({ log, lines, storedCombined: (row.combined as string | null) ?? undefined }, strings.key);
      } else {
        // A placeholder: only its first line's time and its lines are known.
        fields = ["", null, row.start_time, 0, 0, 0, null, null, "", null, 0, 0, null, null, null, null, null, null, null];
      }
      insert.run(...head, ...fields, encodeLines(lines));
      if (row.has_record === 1n) search.add(docColumnsOf(id, fields, row.resource as string), nextId);
    }
    after = rows.at(-1)!.id as bigint;
  }
  db.exec(`
    DROP TABLE requests;
    DROP TABLE lines;
    DROP TABLE moves;
    ALTER TABLE requests_006 RENAME TO requests;
    ${indexes006}
    -- Offsets and positions taken before this migration name rows by their old keys: they expire.
    UPDATE meta SET value = (SELECT value FROM meta WHERE key = 'seq') WHERE key = 'moves_floor';
  `);
}

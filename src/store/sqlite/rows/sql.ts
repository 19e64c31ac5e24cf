import { ipTextSql, resourceSql, stringColumns } from "./stored-record.js";

/**
 * SQL written once and used by several parts of the SQLite backend.
 */

/** The key of an app by its id (no row: the app has stored nothing). */
export const appKeySql = "SELECT id FROM apps WHERE app_id = ?";

/** The key of a (module, version) of an app. */
export const versionKeySql = "SELECT id FROM versions WHERE app_key = ? AND module_id = ? AND version_id = ?";

/**
 * A request row with the names of its app and version and the texts of its
 * strings, as rowToRequestLog reads it; `requests` may carry an INDEXED BY.
 */
export const recordJoinFrom = (requests: string) => `
  ${requests} JOIN versions v ON v.id = r.version_key JOIN apps a ON a.id = r.app_key
  ${stringColumns.map(([c]) => `LEFT JOIN strings s_${c} ON s_${c}.id = r.${c}`).join(" ")}`;
export const recordJoin = recordJoinFrom("requests r");
export const recordColumnsSql = `r.*, a.app_id, v.module_id, v.version_id, ${stringColumns.map(([c]) => `s_${c}.text AS ${c}_text`).join(", ")}`;

const text = (column: string) => `(SELECT text FROM strings WHERE id = r.${column})`;

/**
 * What a write or retention needs to know of a stored row (`requests r`):
 * its key, its shares of the usage and stats rollups (rollups.ts
 * StoredRow, strings as text) and the columns of its search document
 * (search-doc.ts).
 */
export const storedRowColumnsSql = `r.id, r.app_key, r.version_key, r.has_record, r.finished, r.sort_time, r.record_bytes,
  r.line_count, r.line_bytes, coalesce(${text("url_map_entry")}, '') AS url_map_entry, ${resourceSql} AS resource, r.status, r.latency,
  r.response_size, ${ipTextSql} AS ip, ${text("user_agent")} AS user_agent,
  r.nickname, r.combined, r.referrer AS referrer_key, r.user_agent AS user_agent_key`;
/** The same, as a SELECT of `requests r` to go on with FROM (a write and retention read rows by it). */
export const storedRowSql = `SELECT ${storedRowColumnsSql}`;

/** The last change sequence number committed. */
export const currentSeqSql = "SELECT value FROM meta WHERE key = 'seq'";

/**
 * The last row id whose document the search index holds: every row of a
 * record up to it is indexed, none after it (search-doc.ts); no key: every
 * row is (a database written before documents were deferred).
 */
export const searchIndexedSql = "coalesce((SELECT value FROM meta WHERE key = 'search_indexed'), 9223372036854775807)";
/**
 * The app's rows the search index does not hold yet (search-doc.ts): the ids after its mark, a few thousand at
 * most. NOT INDEXED: left alone, SQLite walks the app's whole time index for `app_key` (5.9 s at 10M requests)
 * instead of seeking the row ids after the mark (13 ms).
 */
export const unindexedRowsSql = `SELECT r.id FROM requests r NOT INDEXED WHERE r.id > ${searchIndexedSql} AND r.app_key = ? AND r.has_record = 1`;

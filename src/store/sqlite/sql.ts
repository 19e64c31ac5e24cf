/**
 * SQL written once and used by several parts of the SQLite backend.
 */

/** The key of an app by its id (no row: the app has stored nothing). */
export const appKeySql = "SELECT id FROM apps WHERE app_id = ?";

/** The key of a (module, version) of an app. */
export const versionKeySql = "SELECT id FROM versions WHERE app_key = ? AND module_id = ? AND version_id = ?";

/** A request row with the names of its app and version, as rowToRequestLog reads it. */
export const recordJoin = `
  requests r JOIN versions v ON v.id = r.version_key JOIN apps a ON a.id = r.app_key`;
export const recordColumnsSql = "r.*, a.app_id, v.module_id, v.version_id";

/** What a write or retention needs to know of a stored row: its key and its shares of the usage and stats rollups. */
export const rowUsageColumns = `id, app_key, version_key, has_record, finished, sort_time, record_bytes, line_count, line_bytes,
  url_map_entry, resource, status, latency, response_size, ip, user_agent`;

/** The last change sequence number committed. */
export const currentSeqSql = "SELECT value FROM meta WHERE key = 'seq'";

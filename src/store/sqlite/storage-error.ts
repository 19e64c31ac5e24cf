import { SqliteError } from "better-sqlite3";
import { ReqlogError } from "../../reqlog-error.js";

/** SQLite result codes after which a retry can succeed. */
const retryable = new Set(["SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_FULL"]);

/**
 * Maps a failure inside the store to a STORAGE_ERROR: UNAVAILABLE when a
 * retry can help (busy, locked, disk full), INTERNAL otherwise. ReqlogErrors
 * (e.g. validation inside a write) pass through unchanged.
 */
export function storageError(err: unknown): ReqlogError {
  if (err instanceof ReqlogError) return err;
  if (err instanceof SqliteError) {
    // Extended codes (SQLITE_BUSY_SNAPSHOT) share their primary code's meaning.
    const primary = err.code.split("_").slice(0, 2).join("_");
    if (retryable.has(primary)) {
      const what = primary === "SQLITE_FULL" ? "storage is full" : "storage is busy";
      return ReqlogError.unavailable(`${what}, retry later`, err);
    }
  }
  return ReqlogError.from(err);
}

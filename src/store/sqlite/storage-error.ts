import { SqliteError } from "better-sqlite3";
import { ReqlogError } from "../../reqlog-error.js";

/**
 * SQLite result codes after which a retry can succeed once the fault is gone:
 * busy or locked, a full disk, a database made read-only, an I/O error.
 */
const retryable: Record<string, string> = {
  SQLITE_BUSY: "storage is busy",
  SQLITE_LOCKED: "storage is busy",
  SQLITE_FULL: "storage is full",
  SQLITE_READONLY: "storage is read-only",
  SQLITE_IOERR: "storage I/O error",
};

/**
 * Maps a failure inside the store to a STORAGE_ERROR: UNAVAILABLE when a
 * retry can help, INTERNAL otherwise (a corrupt database). ReqlogErrors
 * (e.g. validation inside a write) pass through unchanged.
 */
export function storageError(err: unknown): ReqlogError {
  if (err instanceof ReqlogError) return err;
  if (err instanceof SqliteError) {
    // Extended codes (SQLITE_BUSY_SNAPSHOT) share their primary code's meaning.
    const primary = err.code.split("_").slice(0, 2).join("_");
    const what = retryable[primary];
    if (what !== undefined) return ReqlogError.unavailable(`${what}, retry later`, err);
  }
  return ReqlogError.from(err);
}

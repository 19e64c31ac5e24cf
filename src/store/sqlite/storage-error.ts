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

/** CANCELLED when the call's signal has aborted: work for a caller that is gone is not begun. */
export function throwIfCancelled(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw ReqlogError.cancelled();
}

/**
 * Runs storage work for a call: not begun once the call is cancelled (no
 * signal: work of no call, e.g. the token CLI's), and
 * whatever it throws (at once or later) mapped by storageError. Every
 * public method of the SQLite backend goes through here.
 */
export async function guarded<T>(signal: AbortSignal | undefined, work: () => T | Promise<T>): Promise<T> {
  throwIfCancelled(signal);
  try {
    return await work();
  } catch (err) {
    throw storageError(err);
  }
}

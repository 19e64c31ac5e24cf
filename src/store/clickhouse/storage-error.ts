import { ClickHouseError } from "@clickhouse/client";
import { ReqlogError } from "../../reqlog-error.js";

/**
 * ClickHouse error codes after which a retry can succeed once the fault is
 * gone: the server is overloaded, out of memory or disk, has too many parts
 * waiting to merge, timed out, or lost a connection.
 */
const retryableCodes = new Map<string, string>([
  ["159", "storage timed out"], // TIMEOUT_EXCEEDED
  ["202", "storage is busy"], // TOO_MANY_SIMULTANEOUS_QUERIES
  ["209", "storage timed out"], // SOCKET_TIMEOUT
  ["210", "storage is unreachable"], // NETWORK_ERROR
  ["241", "storage is out of memory"], // MEMORY_LIMIT_EXCEEDED
  ["243", "storage is full"], // NOT_ENOUGH_SPACE
  ["252", "storage is busy merging"], // TOO_MANY_PARTS
]);

/** Connection failures of Node's HTTP client (the server is down, restarting, or unreachable). */
const connectionCodes = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN"]);

/**
 * Maps a failure inside the ClickHouse backend to a STORAGE_ERROR:
 * UNAVAILABLE when a retry can help, INTERNAL otherwise (a query ClickHouse
 * refused: a bug, or a schema not ours). ReqlogErrors pass through.
 */
export function storageError(err: unknown): ReqlogError {
  if (err instanceof ReqlogError) return err;
  if (err instanceof ClickHouseError) {
    const what = retryableCodes.get(err.code);
    if (what !== undefined) return ReqlogError.unavailable(`${what}, retry later`, err);
    return ReqlogError.from(err);
  }
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === "string" && connectionCodes.has(code)) {
    return ReqlogError.unavailable("storage is unreachable, retry later", err);
  }
  if (err instanceof Error && /timeout/i.test(err.message)) return ReqlogError.unavailable("storage timed out, retry later", err);
  return ReqlogError.from(err);
}

/**
 * Runs the storage work of a call: not begun once the call is cancelled;
 * whatever it throws mapped by storageError, except that a failure after the
 * call was cancelled (its query aborted) is CANCELLED.
 */
export async function guarded<T>(signal: AbortSignal | undefined, work: () => Promise<T>): Promise<T> {
  if (signal?.aborted) throw ReqlogError.cancelled();
  try {
    return await work();
  } catch (err) {
    if (signal?.aborted) throw ReqlogError.cancelled();
    throw storageError(err);
  }
}

import { Code, ConnectError } from "@connectrpc/connect";
import { RetryInfoSchema } from "../../gen/google/rpc/status_pb.js";

/** How long to wait before sending again after failures: exponential, capped, with jitter. */
export interface RetryOptions {
  /** The first wait, in ms (default 100). */
  initialMs?: number;
  /** The longest wait, in ms (default 10,000). */
  maxMs?: number;
}

/**
 * What a failed Ingest stream means for the batch it was sending.
 * - `retry`: the service is unavailable, busy, over a rate, or the connection
 *   failed; sending the same batch again later can succeed.
 * - `refused`: the service refused the batch itself (bad input, or a size
 *   limit: RESOURCE_EXHAUSTED without a RetryInfo); it fails every time.
 */
export interface FailureDecision {
  kind: "retry" | "refused";
  error: ConnectError;
  /** The server's RetryInfo delay, when it sent one. */
  retryAfterMs: number | undefined;
}

/** Codes that say the request itself cannot succeed, whenever it is sent. */
const refusedCodes: ReadonlySet<Code> = new Set([
  Code.InvalidArgument,
  Code.OutOfRange,
  Code.FailedPrecondition,
  Code.Unimplemented,
]);

/** The RetryInfo delay of a failure, in ms. */
function retryAfterOf(error: ConnectError): number | undefined {
  const delay = error.findDetails(RetryInfoSchema)[0]?.retryDelay;
  if (!delay) return undefined;
  return Number(delay.seconds) * 1000 + Math.ceil(delay.nanos / 1_000_000);
}

/**
 * Sorts a failure into retry or refused. RESOURCE_EXHAUSTED is a rate limit
 * (retry after its RetryInfo) when the server says when to retry, and a size
 * limit (refused) when it does not: reqlog sends RetryInfo exactly with its
 * rate limits. Everything else (UNAVAILABLE, a reset connection, a deadline,
 * UNAUTHENTICATED while a token is being set up, INTERNAL) is retried:
 * losing logs to a passing fault is worse than trying again.
 */
export function decideFailure(err: unknown): FailureDecision {
  const error = ConnectError.from(err);
  const retryAfterMs = retryAfterOf(error);
  if (refusedCodes.has(error.code)) return { kind: "refused", error, retryAfterMs };
  if (error.code === Code.ResourceExhausted && retryAfterMs === undefined) return { kind: "refused", error, retryAfterMs };
  return { kind: "retry", error, retryAfterMs };
}

/**
 * The wait before attempt `failures` + 1 after `failures` failures in a row:
 * initialMs · 2^(failures-1), capped at maxMs, drawn from its upper half
 * ("equal jitter", so clients that failed together do not come back
 * together, yet none comes back at once), and never shorter than the
 * server's RetryInfo delay.
 */
export function retryDelay(
  failures: number,
  retryAfterMs: number | undefined,
  options: RetryOptions = {},
  random: () => number = Math.random,
): number {
  const initial = options.initialMs ?? 100;
  const max = options.maxMs ?? 10_000;
  const ceiling = Math.min(max, initial * 2 ** Math.max(0, failures - 1));
  const jittered = ceiling / 2 + random() * (ceiling / 2);
  return Math.max(retryAfterMs ?? 0, Math.round(jittered));
}

import { exceeded, type Limits } from "../limits.js";
import { ReqlogError } from "../reqlog-error.js";

/**
 * The latest time (µs) a write may carry: max-future-seconds after `now`,
 * the server's clock. Times are checked against it once per call, so every
 * record and line of one call is held to the same bound.
 */
export function latestTime(limits: Pick<Limits, "maxFutureSeconds">, now: bigint): bigint {
  return now + BigInt(limits.maxFutureSeconds) * 1_000_000n;
}

/** The last µs of the year 9999: times past it are shown as numbers (ISO 8601 has four-digit years). */
const lastIsoTime = 253_402_300_799_999_999n;

function shown(usec: bigint): string {
  return usec >= 0n && usec <= lastIsoTime ? new Date(Number(usec / 1000n)).toISOString() : `${usec} µs`;
}

/**
 * Refuses a time a writer gave that lies more than max-future-seconds ahead
 * of the server's clock (`latest`, from latestTime): such a record would sort
 * first forever, and Stats and Usage would count hours up to it. Times
 * before 1970 (negative) are refused where each field is read.
 */
export function checkNotFuture(
  time: bigint,
  where: string,
  limits: Pick<Limits, "maxFutureSeconds">,
  latest: bigint,
): void {
  if (time <= latest) return;
  const ahead = (time - latest) / 1_000_000n + BigInt(limits.maxFutureSeconds);
  throw exceeded(
    limits,
    "maxFutureSeconds",
    ahead.toString(),
    `how far ${where} (${shown(time)}) lies ahead of the server's clock, in seconds,`,
    "times are microseconds since 1970-01-01T00:00:00Z",
  );
}

/** Refuses a number that cannot be negative (status, response_size, latency). */
export function checkNotNegative(value: number | bigint, where: string): void {
  if (value < 0) throw ReqlogError.invalid(`${where} is negative (${value})`);
}

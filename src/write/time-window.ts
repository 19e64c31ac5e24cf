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

/** Units a time ahead of the clock is told in: the largest of which it holds at least two. */
const aheadUnits: [bigint, string][] = [
  [31_557_600_000_000n, "years"], // 365.25 days
  [86_400_000_000n, "days"],
  [3_600_000_000n, "hours"],
  [60_000_000n, "minutes"],
  [1_000_000n, "seconds"],
];

/** How far ahead `usec` is, as a person says it: "3 days", "about 26 hours", "about 292271 years". */
export function aheadText(usec: bigint): string {
  const [unit, name] = aheadUnits.find(([unit]) => usec >= 2n * unit) ?? aheadUnits.at(-1)!;
  if (usec % unit === 0n) return `${usec / unit} ${name}`;
  return `about ${(usec + unit / 2n) / unit} ${name}`;
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
  const now = latest - BigInt(limits.maxFutureSeconds) * 1_000_000n;
  throw exceeded(
    limits,
    "maxFutureSeconds",
    `${aheadText(time - now)} ahead of the server's clock`,
    `${where}, ${shown(time)},`,
    "times are microseconds since 1970-01-01T00:00:00Z",
  );
}

/** Refuses a number that cannot be negative (status, response_size, latency). */
export function checkNotNegative(value: number | bigint, where: string): void {
  if (value < 0) throw ReqlogError.invalid(`${where} is negative (${value})`);
}

/** µs in an hour: the rollups' unit of time. */
export const usecPerHour = 3_600_000_000n;

/** Hours since the epoch of a time in µs (rounded down), as the rollups count them. */
export function hourOf(usec: bigint): bigint {
  return usec >= 0n ? usec / usecPerHour : (usec - usecPerHour + 1n) / usecPerHour;
}

/** µs in an hour as a double (exact). */
const usecPerHourNumber = 3_600_000_000;

/**
 * hourOf of a time written as decimal text (a row's sort_time), as text.
 * A non-negative time of at most 15 digits (before the year 33658) is exact
 * as a double, and so is its hour: a quotient just below a whole number
 * is at least 1/3.6e9 below it, far more than a double's step there. Others
 * take the BigInt path.
 */
export function hourText(usec: string): string {
  if (usec.length <= 15 && usec.charCodeAt(0) !== 45 /* - */) return String(Math.floor(Number(usec) / usecPerHourNumber));
  return String(hourOf(BigInt(usec)));
}

/** µs in an hour: the rollups' unit of time. */
export const usecPerHour = 3_600_000_000n;

/** Hours since the epoch of a time in µs (rounded down), as the rollups count them. */
export function hourOf(usec: bigint): bigint {
  return usec >= 0n ? usec / usecPerHour : (usec - usecPerHour + 1n) / usecPerHour;
}

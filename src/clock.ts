/** The current time in microseconds since the epoch; injected so tests control it. */
export type Clock = () => bigint;

export const systemClock: Clock = () =>
  BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000));

/**
 * The same clock as a number of microseconds (exact: 2^53 µs is year 2255),
 * for the SDK's per-request path, where a BigInt per reading costs more
 * than the reading.
 */
export const microsecondsNow = (): number => Math.round((performance.timeOrigin + performance.now()) * 1000);

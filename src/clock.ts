/** The current time in microseconds since the epoch; injected so tests control it. */
export type Clock = () => bigint;

export const systemClock: Clock = () =>
  BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000));

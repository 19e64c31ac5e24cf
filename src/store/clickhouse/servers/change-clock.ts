/**
 * Change numbers without a single counter: every version a write makes, and
 * every status, takes a number `tick << 12 | slot`, where `slot` (1–4095) is
 * this server's (server-slots.ts) and `tick` a hybrid logical clock in µs:
 * past the last tick taken, the wall clock, and the tick of every number the
 * server has read (`observe`). So numbers of two servers never collide, they
 * follow time across servers, and a request's next version always has a
 * higher number than the version its writer read.
 *
 * Numbers from before migration 004 (one counter per database) are below
 * 2^56 and count as slot 0, which is always committed.
 */
export const slotBits = 12n;
const slotMask = (1n << slotBits) - 1n;
/** The first number of the per-server scheme; the one counter of reqlog before 004 never came near it. */
export const legacyLimit = 1n << 56n;
/** The most servers that can hold a slot at once. */
export const maxSlots = Number(slotMask);

/** The slot a change number belongs to (0: from before migration 004). */
export function slotOf(seq: bigint): number {
  return seq < legacyLimit ? 0 : Number(seq & slotMask);
}

export interface ChangeClock {
  /** This server's slot. */
  readonly slot: number;
  /** The next number. */
  next(): bigint;
  /** Moves the clock past a number read from the database (another server's, or this slot's before a restart). */
  observe(seq: bigint): void;
  /** The highest number of this slot whose group ClickHouse has stored (its mark, before it is published). */
  readonly committed: bigint;
  /** Marks every number of this slot up to `seq` as stored (groups are stored one at a time, in order). */
  commit(seq: bigint): void;
}

/** A clock for `slot`, past `start` (the slot's last mark, or any number read), on the wall clock `wallUs`. */
export function createChangeClock(slot: number, start: bigint, wallUs: () => bigint): ChangeClock {
  let tick = start >= legacyLimit ? start >> slotBits : 0n;
  let committed = start >= legacyLimit && slotOf(start) === slot ? start : 0n;
  return {
    slot,
    next() {
      const wall = wallUs();
      tick = wall > tick ? wall : tick + 1n;
      return (tick << slotBits) | BigInt(slot);
    },
    observe(seq) {
      if (seq >= legacyLimit && seq >> slotBits > tick) tick = seq >> slotBits;
    },
    get committed() {
      return committed;
    },
    commit(seq) {
      if (seq > committed) committed = seq;
    },
  };
}

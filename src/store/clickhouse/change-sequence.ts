/**
 * The change sequence: every version a write makes takes the next number
 * (its ReplacingMergeTree version, and how Tail and paged Reads tell what
 * changed after a point). Numbers live in this process, starting after the
 * highest one stored: the backend assumes it is the only writer of its
 * database. `committed` is the highest number of a group ClickHouse has
 * accepted, in order (groups are inserted one at a time); numbers of a group
 * that failed are skipped.
 */
export function createChangeSequence(start: bigint): ChangeSequence {
  let last = start;
  let committed = start;
  return {
    next: (): bigint => ++last,
    /** Marks every number up to `seq` as committed. */
    commit(seq: bigint): void {
      if (seq > committed) committed = seq;
    },
    get committed(): bigint {
      return committed;
    },
    /** The highest number taken: groups up to it may be stored, in part or whole, before they count as committed. */
    get issued(): bigint {
      return last;
    },
  };
}

export interface ChangeSequence {
  next(): bigint;
  /** Marks every number up to `seq` as committed. */
  commit(seq: bigint): void;
  readonly committed: bigint;
  /**
   * The highest number taken: groups up to it may be stored, in part or whole, before they count as committed.
   */
  readonly issued: bigint;
}

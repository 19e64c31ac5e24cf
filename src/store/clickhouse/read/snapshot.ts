import { ReqlogError } from "../../../reqlog-error.js";
import { legacyLimit, slotBits, slotOf } from "../servers/change-clock.js";
import { sqlInt } from "../rows/sql-literal.js";

/**
 * What is committed at a moment, as every server agrees on it: the mark of
 * each slot (every number of that slot up to its mark is stored and
 * visible; server-slots.ts), slot 0 the numbers from before migration 004.
 * A Read's snapshot and a Tail's position are one; `at` is when it was
 * taken (the backend's clock, µs: paging history is pruned by time).
 */
export interface Snapshot {
  /** slot → mark */
  marks: ReadonlyMap<number, bigint>;
  at: bigint;
}

/** Whether a version numbered `seq` is in the snapshot. */
export function holds(snapshot: Snapshot, seq: bigint): boolean {
  return seq <= (snapshot.marks.get(slotOf(seq)) ?? 0n);
}

/**
 * `column` (a change number) in the snapshot, as SQL: numbers from before
 * 004 are all at or below slot 0's mark, and each later number is compared
 * with its own slot's mark (transform(), in ClickHouse since 2015).
 */
export function heldSql(column: string, snapshot: Snapshot): string {
  const legacy = snapshot.marks.get(0) ?? 0n;
  const slots = [...snapshot.marks].filter(([slot]) => slot !== 0);
  const own = `${column} <= ${sqlInt(legacy)}`;
  if (slots.length === 0) return own;
  const list = (values: readonly bigint[]) => `[${values.map((v) => `toUInt64(${sqlInt(v)})`).join(", ")}]`;
  const mark = `transform(bitAnd(${column}, 4095), ${list(slots.map(([s]) => BigInt(s)))}, ${list(slots.map(([, m]) => m))}, toUInt64(0))`;
  return `(${own} OR ${column} <= ${mark})`;
}

/**
 * The position after `seq` within `upTo`, from `after` (a Tail that stopped
 * at a full batch whose last number was `seq`; without `seq`, all of
 * `upTo`): never behind `after`, whose marks may have been read later.
 */
export function advanceTo(after: Snapshot, upTo: Snapshot, seq = 1n << 64n): Snapshot {
  const marks = new Map(after.marks);
  for (const [slot, mark] of upTo.marks) {
    // (A mark is a number of its own slot: cursors and positions read the slot from it.)
    const reached = mark < seq ? mark : lastOfSlotUpTo(seq, slot);
    if (reached > (marks.get(slot) ?? 0n)) marks.set(slot, reached);
  }
  return { marks, at: upTo.at };
}

/** The highest number of `slot` at or below `seq`. */
function lastOfSlotUpTo(seq: bigint, slot: number): bigint {
  if (slot === 0) return seq < legacyLimit ? seq : legacyLimit - 1n;
  const inTick = ((seq >> slotBits) << slotBits) | BigInt(slot);
  return inTick <= seq ? inTick : inTick - (1n << slotBits);
}

/** Whether `a` holds every version `b` holds. */
export function covers(a: Snapshot, b: Snapshot): boolean {
  for (const [slot, mark] of b.marks) if (mark > (a.marks.get(slot) ?? 0n)) return false;
  return true;
}

/** Whether two snapshots hold the same versions. */
export function sameMarks(a: Snapshot, b: Snapshot): boolean {
  if (a.marks.size !== b.marks.size) return false;
  for (const [slot, mark] of a.marks) if (b.marks.get(slot) !== mark) return false;
  return true;
}

/** Bytes of a snapshot: when it was taken, how many marks, the marks (each names its slot: slotOf). */
export function writeSnapshot(snapshot: Snapshot, bytes: Buffer, offset: number): number {
  bytes.writeBigInt64BE(snapshot.at, offset);
  bytes.writeUInt16BE(snapshot.marks.size, offset + 8);
  let at = offset + 10;
  for (const mark of snapshot.marks.values()) {
    bytes.writeBigUInt64BE(mark, at);
    at += 8;
  }
  return at;
}

export const snapshotBytes = (snapshot: Snapshot) => 10 + 8 * snapshot.marks.size;

/** A snapshot read back from `bytes` at `offset`, and where it ends. */
export function readSnapshot(bytes: Buffer, offset: number): { snapshot: Snapshot; end: number } {
  if (bytes.length < offset + 10) throw malformed();
  const at = bytes.readBigInt64BE(offset);
  const count = bytes.readUInt16BE(offset + 8);
  if (bytes.length < offset + 10 + 8 * count) throw malformed();
  const marks = new Map<number, bigint>();
  for (let i = 0; i < count; i++) {
    const mark = bytes.readBigUInt64BE(offset + 10 + 8 * i);
    marks.set(slotOf(mark), mark);
  }
  return { snapshot: { marks, at }, end: offset + 10 + 8 * count };
}

const malformed = () => ReqlogError.invalid("offset is malformed: pass back an offset exactly as a Read returned it");

import { ReqlogError } from "../../../reqlog-error.js";
import type { ChangePosition, Cursor } from "../../store.js";
import { readSnapshot, type Snapshot, snapshotBytes, writeSnapshot } from "./snapshot.js";

/**
 * A position in the newest-first order, as the ClickHouse backend keeps it:
 * the sort time and rkey (the request's creation number, unique) of a
 * record, as the order stood at `snapshot` (the marks when the first page
 * was read, snapshot.ts): any server reads the same page from it.
 */
export interface ClickHouseCursor {
  snapshot: Snapshot;
  sortTime: bigint;
  rkey: bigint;
}

/** First byte of a cursor: its kind and format (a SQLite cursor never starts so; 0xc1, one counter's, is gone with 004). */
const cursorFormat = 0xc3;
const positionFormat = 0xc4;

const malformed = () => ReqlogError.invalid("offset is malformed: pass back an offset exactly as a Read returned it");

export function encodeCursor(cursor: ClickHouseCursor): Cursor {
  const bytes = Buffer.alloc(1 + snapshotBytes(cursor.snapshot) + 16);
  bytes.writeUInt8(cursorFormat, 0);
  const at = writeSnapshot(cursor.snapshot, bytes, 1);
  bytes.writeBigInt64BE(cursor.sortTime, at);
  bytes.writeBigUInt64BE(cursor.rkey, at + 8);
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** The cursor in an offset's bytes (verified by the offset codec; checked here for shape only). */
export function decodeCursor(cursor: Cursor): ClickHouseCursor {
  if (cursor[0] === 0xc1) {
    throw ReqlogError.invalid("offset expired: it was made before this database's servers were upgraded; start the read again without it");
  }
  if (cursor[0] !== cursorFormat) throw malformed();
  const bytes = Buffer.from(cursor.buffer, cursor.byteOffset, cursor.byteLength);
  const { snapshot, end } = readSnapshot(bytes, 1);
  if (bytes.length !== end + 16) throw malformed();
  return { snapshot, sortTime: bytes.readBigInt64BE(end), rkey: bytes.readBigUInt64BE(end + 8) };
}

/** A change position is a snapshot: the marks up to which a Tail has seen every change. */
export function encodePosition(snapshot: Snapshot): ChangePosition {
  const bytes = Buffer.alloc(1 + snapshotBytes(snapshot));
  bytes.writeUInt8(positionFormat, 0);
  writeSnapshot(snapshot, bytes, 1);
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export function decodePosition(position: ChangePosition): Snapshot {
  if (position[0] !== positionFormat) throw new Error(`cannot read a change position of ${position.length} bytes`);
  const bytes = Buffer.from(position.buffer, position.byteOffset, position.byteLength);
  const { snapshot, end } = readSnapshot(bytes, 1);
  if (end !== bytes.length) throw new Error(`cannot read a change position of ${position.length} bytes`);
  return snapshot;
}

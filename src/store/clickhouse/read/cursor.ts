import { ReqlogError } from "../../../reqlog-error.js";
import type { ChangePosition, Cursor } from "../../store.js";

/**
 * A position in the newest-first order, as the ClickHouse backend keeps it:
 * the sort time and rkey (the request's creation seq, unique) of a record,
 * as the order stood at `snapshot` (the change sequence number when the
 * first page was read).
 */
export interface ClickHouseCursor {
  snapshot: bigint;
  sortTime: bigint;
  rkey: bigint;
}

/** First byte of a cursor: its kind and format (a SQLite cursor, 24 bytes, never passes). */
const cursorFormat = 0xc1;
const cursorBytes = 25;
const positionFormat = 0xc2;
const positionBytes = 9;

export function encodeCursor(cursor: ClickHouseCursor): Cursor {
  const bytes = Buffer.alloc(cursorBytes);
  bytes.writeUInt8(cursorFormat, 0);
  bytes.writeBigUInt64BE(cursor.snapshot, 1);
  bytes.writeBigInt64BE(cursor.sortTime, 9);
  bytes.writeBigUInt64BE(cursor.rkey, 17);
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** The cursor in an offset's bytes (verified by the offset codec; checked here for shape only). */
export function decodeCursor(cursor: Cursor): ClickHouseCursor {
  if (cursor.length !== cursorBytes || cursor[0] !== cursorFormat) {
    throw ReqlogError.invalid("offset is malformed: pass back an offset exactly as a Read returned it");
  }
  const bytes = Buffer.from(cursor.buffer, cursor.byteOffset, cursor.byteLength);
  return { snapshot: bytes.readBigUInt64BE(1), sortTime: bytes.readBigInt64BE(9), rkey: bytes.readBigUInt64BE(17) };
}

/** A change position is the change sequence number. */
export function encodePosition(seq: bigint): ChangePosition {
  const bytes = Buffer.alloc(positionBytes);
  bytes.writeUInt8(positionFormat, 0);
  bytes.writeBigUInt64BE(seq, 1);
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export function decodePosition(position: ChangePosition): bigint {
  if (position.length !== positionBytes || position[0] !== positionFormat) {
    throw new Error(`cannot read a change position of ${position.length} bytes`);
  }
  return Buffer.from(position.buffer, position.byteOffset, position.byteLength).readBigUInt64BE(1);
}

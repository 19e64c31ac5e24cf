import { ReqlogError } from "../../../reqlog-error.js";
import type { ChangePosition, Cursor } from "../../store.js";

/**
 * A position in the newest-first order, as the SQLite backend keeps it: the
 * sort time and row id of a record, as the order stood at `snapshot` (the
 * change sequence number when the first page was read).
 */
export interface SqliteCursor {
  snapshot: bigint;
  sortTime: bigint;
  id: bigint;
}

const cursorBytes = 24;

export function encodeCursor(cursor: SqliteCursor): Cursor {
  const bytes = Buffer.alloc(cursorBytes);
  bytes.writeBigInt64BE(cursor.snapshot, 0);
  bytes.writeBigInt64BE(cursor.sortTime, 8);
  bytes.writeBigInt64BE(cursor.id, 16);
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** The cursor in an offset's bytes (verified by the offset codec; checked here for shape only). */
export function decodeCursor(cursor: Cursor): SqliteCursor {
  if (cursor.length !== cursorBytes) {
    throw ReqlogError.invalid("offset is malformed: pass back an offset exactly as a Read returned it");
  }
  const bytes = Buffer.from(cursor.buffer, cursor.byteOffset, cursor.byteLength);
  return { snapshot: bytes.readBigInt64BE(0), sortTime: bytes.readBigInt64BE(8), id: bytes.readBigInt64BE(16) };
}

/** A change position is the change sequence number. */
export function encodePosition(seq: bigint): ChangePosition {
  const bytes = Buffer.alloc(8);
  bytes.writeBigInt64BE(seq);
  return new Uint8Array(bytes.buffer, bytes.byteOffset, 8);
}

export function decodePosition(position: ChangePosition): bigint {
  if (position.length !== 8) throw new Error(`cannot read a change position of ${position.length} bytes`);
  return Buffer.from(position.buffer, position.byteOffset, 8).readBigInt64BE();
}

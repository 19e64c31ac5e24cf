import { createHmac, timingSafeEqual } from "node:crypto";
import { ReqlogError } from "../reqlog-error.js";
import type { Cursor } from "../domain/positions.js";

/**
 * 2: the cursor is the backend's opaque bytes. (1 held a SQLite row id and
 * sequence number in fixed fields; such offsets are refused as malformed.)
 */
const version = 2;
const tagBytes = 8;
/** Longest cursor a backend may hand out. */
const maxCursorBytes = 256;

export interface OffsetCodec {
  /** The offset a client gets for a backend's cursor. */
  encode(appId: string, cursor: Cursor): Uint8Array;
  /** The backend's cursor in an offset; INVALID_ARGUMENT when it is malformed, tampered with or from another app. */
  decode(appId: string, offset: Uint8Array): Cursor;
}

/**
 * Offsets are opaque, versioned bytes: version (1), the backend's cursor, and
 * a tag (8) = HMAC-SHA256 of the app id, version and cursor under the
 * backend's own key. The tag makes a tampered or foreign offset fail to decode
 * instead of silently positioning the cursor somewhere else, so a backend can
 * trust the cursor bytes it gets back.
 */
export function createOffsetCodec(key: Uint8Array): OffsetCodec {
  const tag = (appId: string, payload: Uint8Array) =>
    createHmac("sha256", key).update(appId).update("\0").update(payload).digest().subarray(0, tagBytes);

  return {
    encode(appId, cursor) {
      if (cursor.length > maxCursorBytes) throw new Error(`cannot encode an offset: cursor of ${cursor.length} bytes`);
      const bytes = Buffer.alloc(1 + cursor.length + tagBytes);
      bytes.writeUInt8(version, 0);
      bytes.set(cursor, 1);
      tag(appId, bytes.subarray(0, 1 + cursor.length)).copy(bytes, 1 + cursor.length);
      return new Uint8Array(bytes);
    },
    decode(appId, offset) {
      const bytes = Buffer.from(offset.buffer, offset.byteOffset, offset.byteLength);
      if (bytes.length <= 1 + tagBytes || bytes.length > 1 + maxCursorBytes + tagBytes || bytes[0] !== version) {
        throw ReqlogError.invalid("offset is malformed: pass back an offset exactly as a Read returned it");
      }
      const payload = bytes.subarray(0, bytes.length - tagBytes);
      if (!timingSafeEqual(tag(appId, payload), bytes.subarray(bytes.length - tagBytes))) {
        throw ReqlogError.invalid("offset is not valid for this app (altered, or from another app or database)");
      }
      return new Uint8Array(payload.subarray(1));
    },
  };
}

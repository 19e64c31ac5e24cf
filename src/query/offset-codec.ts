import { createHmac, timingSafeEqual } from "node:crypto";
import { ReqlogError } from "../reqlog-error.js";

/**
 * A position in the newest-first order: the sort time and unique id of a
 * record, as the order stood at `snapshot` (the change sequence number when
 * the first page was read).
 */
export interface Cursor {
  snapshot: bigint;
  sortTime: bigint;
  id: bigint;
}

const version = 1;
const payloadBytes = 1 + 8 + 8 + 8;
const tagBytes = 8;

export interface OffsetCodec {
  encode(appId: string, cursor: Cursor): Uint8Array;
  /** The cursor in an offset; INVALID_ARGUMENT when it is malformed, tampered with or from another app. */
  decode(appId: string, offset: Uint8Array): Cursor;
}

/**
 * Offsets are opaque, versioned bytes: version (1), snapshot (8), sort time
 * (8), id (8) and a tag (8) = HMAC-SHA256 of the app id and those bytes under the database's
 * own key. The tag makes a tampered or foreign offset fail to decode instead
 * of silently positioning the cursor somewhere else.
 */
export function createOffsetCodec(key: Uint8Array): OffsetCodec {
  const tag = (appId: string, payload: Uint8Array) =>
    createHmac("sha256", key).update(appId).update("\0").update(payload).digest().subarray(0, tagBytes);

  return {
    encode(appId, cursor) {
      const bytes = Buffer.alloc(payloadBytes + tagBytes);
      bytes.writeUInt8(version, 0);
      bytes.writeBigInt64BE(cursor.snapshot, 1);
      bytes.writeBigInt64BE(cursor.sortTime, 9);
      bytes.writeBigInt64BE(cursor.id, 17);
      tag(appId, bytes.subarray(0, payloadBytes)).copy(bytes, payloadBytes);
      return new Uint8Array(bytes);
    },
    decode(appId, offset) {
      const bytes = Buffer.from(offset.buffer, offset.byteOffset, offset.byteLength);
      if (bytes.length !== payloadBytes + tagBytes || bytes[0] !== version) {
        throw ReqlogError.invalid("offset is malformed: pass back an offset exactly as a Read returned it");
      }
      const expected = tag(appId, bytes.subarray(0, payloadBytes));
      if (!timingSafeEqual(expected, bytes.subarray(payloadBytes))) {
        throw ReqlogError.invalid("offset is not valid for this app (altered, or from another app or database)");
      }
      return { snapshot: bytes.readBigInt64BE(1), sortTime: bytes.readBigInt64BE(9), id: bytes.readBigInt64BE(17) };
    },
  };
}

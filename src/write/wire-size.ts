import { ScalarType } from "@bufbuild/protobuf";
import { type RequestLog, RequestLogSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import type { AppLine } from "../domain/records.js";

/** Bytes of a varint encoding of an integer (negative int64s take 10). */
function varintBytes(value: bigint | number): number {
  if (value < 0) return 10;
  // Numbers up to 2^53 are exact; the rare larger bigint takes the slow path.
  if (typeof value === "number" || value <= 9_007_199_254_740_991n) {
    let v = Number(value);
    let n = 1;
    while (v >= 128) {
      v = Math.floor(v / 128);
      n++;
    }
    return n;
  }
  let v = value;
  let n = 1;
  while (v >= 0x80n) {
    v >>= 7n;
    n++;
  }
  return n;
}

/**
 * Bytes one app line takes inside a serialized RequestLog: the `line` field's
 * tag (2 bytes, field 29) and length, and the LogLine (time, level, message).
 * This is what Usage counts for a line.
 */
export function lineWireBytes(line: Pick<AppLine, "time" | "level" | "message">): number {
  const message = Buffer.byteLength(line.message, "utf8");
  const inner = 1 + varintBytes(line.time) + 1 + varintBytes(line.level) + 1 + varintBytes(message) + message;
  return 2 + varintBytes(inner) + inner;
}

/** How a RequestLog field is sized: its tag's bytes and its scalar type. */
const sizedFields = RequestLogSchema.fields
  .filter((f) => f.localName !== "line" && f.localName !== "offset")
  .map((f) => {
    if (f.fieldKind !== "scalar") throw new Error(`recordWireBytes cannot size ${f.name}`);
    return { name: f.localName as keyof RequestLog, tag: varintBytes(f.number << 3), scalar: f.scalar };
  });

/**
 * Bytes of a serialized RequestLog without its lines (and without an offset),
 * as toBinary would write it: each set field's tag and value (proto2: a field
 * is set when the message has it as its own property). Usage counts these for
 * a record. Counted rather than serialized: serializing every stored record
 * just to measure it took a fifth of the write path.
 */
export function recordWireBytes(log: RequestLog): number {
  let bytes = 0;
  for (const field of sizedFields) {
    const value = log[field.name];
    if (value === undefined || !Object.hasOwn(log, field.name)) continue;
    bytes += field.tag;
    switch (field.scalar) {
      case ScalarType.STRING: {
        const length = Buffer.byteLength(value as string, "utf8");
        bytes += varintBytes(length) + length;
        break;
      }
      case ScalarType.BYTES: {
        const length = (value as Uint8Array).length;
        bytes += varintBytes(length) + length;
        break;
      }
      case ScalarType.BOOL:
        bytes += 1;
        break;
      case ScalarType.DOUBLE:
        bytes += 8;
        break;
      case ScalarType.INT32:
      case ScalarType.INT64:
        bytes += varintBytes(value as number | bigint);
        break;
      default:
        throw new Error(`recordWireBytes cannot size ${String(field.name)}`);
    }
  }
  return bytes;
}

import { toBinary } from "@bufbuild/protobuf";
import { type RequestLog, RequestLogSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import type { AppLine } from "./validate-lines.js";

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

/** Bytes of a serialized RequestLog without its lines (and without an offset). Usage counts these for a record. */
export function recordWireBytes(log: RequestLog): number {
  const { line, offset } = log;
  log.line = [];
  log.offset = undefined;
  try {
    return toBinary(RequestLogSchema, log).length;
  } finally {
    log.line = line;
    log.offset = offset;
  }
}

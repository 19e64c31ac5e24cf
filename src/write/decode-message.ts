import { type DescMessage, fromBinary, type MessageShape } from "@bufbuild/protobuf";
import { exceeded } from "../limits.js";
import { ReqlogError } from "../reqlog-error.js";

/**
 * A request message's bytes decoded, or INVALID_ARGUMENT naming what did
 * not decode (never a throw from inside a transport). The same on the main
 * thread and in the prepare workers.
 */
export function decodeMessage<Desc extends DescMessage>(schema: Desc, bytes: Uint8Array): MessageShape<Desc> {
  try {
    return fromBinary(schema, bytes, { readUnknownFields: false });
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw ReqlogError.invalid(`cannot decode ${schema.typeName}: ${reason}`);
  }
}

/** A request message over max-message-bytes, in the same words on both ports (`size` may be "more than N"). */
export function messageTooLarge(maxMessageBytes: number, size: number | string): ReqlogError {
  return exceeded({ maxMessageBytes }, "maxMessageBytes", `${size} bytes`, "request message");
}

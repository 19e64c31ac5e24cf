import { create, toBinary } from "@bufbuild/protobuf";
import { anyPack, DurationSchema } from "@bufbuild/protobuf/wkt";
import { Metadata, type ServiceError } from "@grpc/grpc-js";
import { ErrorInfoSchema, RetryInfoSchema, StatusSchema } from "../../gen/google/rpc/status_pb.js";
import type { ReqlogError } from "../reqlog-error.js";

/** The ErrorInfo domain of every reqlog error. */
export const errorDomain = "reqlog";

/**
 * Turns a ReqlogError into the status grpc-js sends: code, message, and a
 * google.rpc.Status in grpc-status-details-bin whose ErrorInfo reason is the
 * LogServiceError.ErrorCode name. This is the only place errors become wire
 * statuses.
 */
export function toServiceError(err: ReqlogError): Partial<ServiceError> {
  const details = create(StatusSchema, {
    code: err.code,
    message: err.message,
    details: [anyPack(ErrorInfoSchema, create(ErrorInfoSchema, { reason: err.reason, domain: errorDomain }))],
  });
  if (err.retryAfterMs !== undefined) {
    const delay = create(DurationSchema, {
      seconds: BigInt(Math.floor(err.retryAfterMs / 1000)),
      nanos: (err.retryAfterMs % 1000) * 1_000_000,
    });
    details.details.push(anyPack(RetryInfoSchema, create(RetryInfoSchema, { retryDelay: delay })));
  }
  const metadata = new Metadata();
  metadata.set("grpc-status-details-bin", Buffer.from(toBinary(StatusSchema, details)));
  return { code: err.code, details: err.message, metadata };
}

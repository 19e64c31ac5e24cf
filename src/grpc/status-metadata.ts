import { create, toBinary } from "@bufbuild/protobuf";
import { anyPack, DurationSchema } from "@bufbuild/protobuf/wkt";
import { Metadata, type ServiceError } from "@grpc/grpc-js";
import type { Logger } from "pino";
import { ErrorInfoSchema, RetryInfoSchema, StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { Code, ReqlogError } from "../reqlog-error.js";

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

/**
 * A failure on its way out of any RPC: normalised, logged by its weight
 * (internal errors with their cause, storage faults as warnings, refused
 * requests at debug level), and turned into the status to send.
 */
export function failure(err: unknown, method: string, logger: Logger): Partial<ServiceError> {
  const error = ReqlogError.from(err);
  if (error.code === Code.INTERNAL) {
    logger.error({ err: error.cause ?? err, method }, "internal error");
  } else if (error.reason === "STORAGE_ERROR") {
    logger.warn({ method, message: error.message, cause: String(error.cause) }, "storage fault");
  } else {
    logger.debug({ method, code: error.code, message: error.message }, "call refused");
  }
  return toServiceError(error);
}

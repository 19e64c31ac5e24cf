import { create, toBinary } from "@bufbuild/protobuf";
import { anyPack } from "@bufbuild/protobuf/wkt";
import { Metadata, type ServiceError } from "@grpc/grpc-js";
import type { Logger } from "pino";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import type { ReqlogError } from "../reqlog-error.js";
import { callFailure, errorDetails } from "../service/call-outcome.js";

/**
 * Turns a ReqlogError into the status grpc-js sends: code, message, and a
 * google.rpc.Status in grpc-status-details-bin with the details every
 * transport sends (ErrorInfo, whose reason is the LogServiceError.ErrorCode
 * name, and RetryInfo for rate limits).
 */
export function toServiceError(err: ReqlogError): Partial<ServiceError> {
  const details = create(StatusSchema, {
    code: err.code,
    message: err.message,
    details: errorDetails(err).map(({ desc, value }) => anyPack(desc, value)),
  });
  const metadata = new Metadata();
  metadata.set("grpc-status-details-bin", Buffer.from(toBinary(StatusSchema, details)));
  return { code: err.code, details: err.message, metadata };
}

/** A failure on its way out of a grpc-js call: logged (callFailure), then the status to send. */
export function failure(err: unknown, method: string, logger: Logger): Partial<ServiceError> {
  return toServiceError(callFailure(err, method, logger));
}

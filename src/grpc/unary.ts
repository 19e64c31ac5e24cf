import type { sendUnaryData, ServerUnaryCall } from "@grpc/grpc-js";
import { status as GrpcStatus } from "@grpc/grpc-js";
import type { Logger } from "pino";
import { ReqlogError } from "../reqlog-error.js";
import type { UnaryHandler } from "../service/handler.js";
import type { Decoded } from "./service-definition.js";
import { toServiceError } from "./status-metadata.js";

/**
 * Adapts a handler to grpc-js: a request that did not decode is refused with
 * the decoder's error, and every failure becomes a status through
 * toServiceError. Internal errors are logged with their cause; the caller
 * gets a generic message.
 */
export function unary<Req, Res>(method: string, handler: UnaryHandler<Req, Res>, logger: Logger) {
  return (call: ServerUnaryCall<Decoded<Req>, Res>, callback: sendUnaryData<Res>): void => {
    const decoded = call.request;
    const result = decoded.ok
      ? handler(decoded.message, { metadata: call.metadata })
      : Promise.reject(decoded.error);
    result.then(
      (response) => callback(null, response),
      (err: unknown) => {
        const error = ReqlogError.from(err);
        if (error.code === GrpcStatus.INTERNAL) {
          logger.error({ err: error.cause ?? err, method }, "internal error");
        } else {
          logger.debug({ method, code: error.code, message: error.message }, "call refused");
        }
        callback(toServiceError(error));
      },
    );
  };
}

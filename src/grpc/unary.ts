import type { sendUnaryData, ServerUnaryCall } from "@grpc/grpc-js";
import type { Logger } from "pino";
import type { UnaryHandler } from "../service/handler.js";
import type { Decoded } from "./service-definition.js";
import { failure } from "./status-metadata.js";

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
      (err: unknown) => callback(failure(err, method, logger)),
    );
  };
}

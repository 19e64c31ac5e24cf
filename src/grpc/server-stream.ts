import type { ServerWritableStream } from "@grpc/grpc-js";
import type { Logger } from "pino";
import type { Decoded } from "./service-definition.js";
import { failure } from "./status-metadata.js";

/** A server-streaming handler: resolves when the stream is over. */
export type StreamHandler<Req, Res> = (request: Req, call: ServerWritableStream<unknown, Res>) => Promise<void>;

/** Adapts a server-streaming handler to grpc-js, with the same error mapping as unary calls. */
export function serverStream<Req, Res>(method: string, handler: StreamHandler<Req, Res>, logger: Logger) {
  return (call: ServerWritableStream<Decoded<Req>, Res>): void => {
    const decoded = call.request;
    const stream = call as unknown as ServerWritableStream<unknown, Res>;
    const result = decoded.ok ? handler(decoded.message, stream) : Promise.reject(decoded.error);
    result.then(
      () => {
        // A cancelled call is over already: ending it again would write to a
        // reset HTTP/2 stream.
        if (!call.cancelled && !call.writableEnded) call.end();
      },
      (err: unknown) => {
        if (!call.cancelled) call.emit("error", failure(err, method, logger));
      },
    );
  };
}

import { type ServerInterceptor, ServerInterceptingCall, status } from "@grpc/grpc-js";
import { streamingRequestPaths } from "../net/connection-guard.js";

/**
 * Ends a call whose request has not arrived whole (the client has not
 * half-closed its side) within `timeoutMs` of its start, with
 * DEADLINE_EXCEEDED naming --request-timeout: a body that trickles in would
 * hold its stream, and the connection, for ever (grpc-js waits as long as
 * the client sends). Ingest's stream of batches is exempt.
 */
export function requestTimeoutInterceptor(timeoutMs: number): ServerInterceptor {
  return (method, call) => {
    if (streamingRequestPaths.has(method.path)) return new ServerInterceptingCall(call);
    let timer: NodeJS.Timeout | undefined;
    const settle = () => clearTimeout(timer);
    return new ServerInterceptingCall(call, {
      start(next) {
        timer = setTimeout(() => {
          call.sendStatus({
            code: status.DEADLINE_EXCEEDED,
            details: `the request did not arrive whole within --request-timeout (${timeoutMs} ms)`,
          });
        }, timeoutMs);
        timer.unref();
        next({
          onReceiveHalfClose(nextHalfClose) {
            settle();
            nextHalfClose();
          },
          onCancel() {
            settle();
          },
        });
      },
      sendStatus(statusObject, nextStatus) {
        settle();
        nextStatus(statusObject);
      },
    });
  };
}

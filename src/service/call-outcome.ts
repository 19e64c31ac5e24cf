import { create, type DescMessage, type Message } from "@bufbuild/protobuf";
import type { Logger } from "pino";
import { ErrorInfoSchema, RetryInfoSchema } from "../../gen/google/rpc/status_pb.js";
import { Code, ReqlogError } from "../reqlog-error.js";

/** The ErrorInfo domain of every reqlog error. */
export const errorDomain = "reqlog";

/** The details every transport sends with a failed call's status: ErrorInfo, and RetryInfo for rate limits. */
export function errorDetails(error: ReqlogError): { desc: DescMessage; value: Message }[] {
  const details: { desc: DescMessage; value: Message }[] = [
    { desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason: error.reason, domain: errorDomain }) },
  ];
  if (error.retryAfterMs !== undefined) {
    const retryDelay = {
      seconds: BigInt(Math.floor(error.retryAfterMs / 1000)),
      nanos: (error.retryAfterMs % 1000) * 1_000_000,
    };
    details.push({ desc: RetryInfoSchema, value: create(RetryInfoSchema, { retryDelay }) });
  }
  return details;
}

/**
 * A failure on its way out of any RPC, whatever the transport: normalised,
 * and logged by its weight (internal errors with their cause, storage
 * faults as warnings, refused requests at debug level). The transport then
 * turns it into its own status.
 */
export function callFailure(err: unknown, method: string, logger: Logger): ReqlogError {
  const error = ReqlogError.from(err);
  if (error.code === Code.INTERNAL) {
    logger.error({ err: error.cause ?? err, method }, "internal error");
  } else if (error.reason === "STORAGE_ERROR") {
    logger.warn({ method, message: error.message, cause: String(error.cause) }, "storage fault");
  } else {
    logger.debug({ method, code: error.code, message: error.message }, "call refused");
  }
  return error;
}

/** Watches calls as they start and end (metrics), the same for every transport. */
export interface CallObserver {
  /** A call of `method` started on `transport`; the function returned is called once with its status code. */
  start(service: string, method: string, kind: string, transport: string): (code: Code) => void;
}

export const noObserver: CallObserver = { start: () => () => {} };

/** One observer that tells each of `observers` of every call. */
export function allObservers(...observers: CallObserver[]): CallObserver {
  return {
    start(service, method, kind, transport) {
      const ends = observers.map((o) => o.start(service, method, kind, transport));
      return (code) => {
        for (const end of ends) end(code);
      };
    },
  };
}

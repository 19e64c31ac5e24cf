import type { DescService } from "@bufbuild/protobuf";
import type { Access, Authorizer } from "../auth/authorizer.js";
import { type Code, ConnectError, type ConnectRouter, decodeBinaryHeader, type HandlerContext } from "@connectrpc/connect";
import type { Logger } from "pino";
import type { CallMetadata } from "../domain/call-metadata.js";
import type { Code as StatusCode, ReqlogError } from "../reqlog-error.js";
import { type CallObserver, errorDetails, noObserver } from "../service/call-outcome.js";
import { createCallRunner, oneRequest, unaryReply } from "../service/call-runner.js";
import { LogService, type LogServiceCore, LogsService, methodAccess, otlpMethodAccess } from "../service/log-service.js";

/**
 * HTTP headers as call metadata: `-bin` headers are base64 (as gRPC and
 * Connect send them), several values of one header arrive joined by commas.
 */
export function headerMetadata(headers: Headers): CallMetadata {
  return {
    get(key) {
      const value = headers.get(key);
      if (value === null) return [];
      if (!key.endsWith("-bin")) return [value];
      return value.split(",").map((part) => decodeBinaryHeader(part.trim()));
    },
  };
}

/** A ReqlogError as Connect sends it: the same code, message and details as the gRPC port. */
function toConnectError(error: ReqlogError): ConnectError {
  return new ConnectError(error.message, error.code as number as Code, undefined, errorDetails(error));
}

/** Refused by Connect itself (a request that did not decode): sent as it is. */
function connectCode(err: unknown): StatusCode | undefined {
  return err instanceof ConnectError ? (err.code as number as StatusCode) : undefined;
}

/** Whatever a call throws, as Connect sends it. */
function asConnectError(err: unknown): ConnectError {
  return err instanceof ConnectError ? err : toConnectError(err as ReqlogError);
}

/** A stream's replies, its failure (mid-stream too) as a ConnectError with the same details as a unary call's. */
async function* connectStream(replies: AsyncIterable<unknown>): AsyncIterable<unknown> {
  try {
    yield* replies;
  } catch (err) {
    throw asConnectError(err);
  }
}

/**
 * The LogService on a Connect router (Connect, gRPC-Web and gRPC, over
 * HTTP/1.1 and HTTP/2): the same handlers as the grpc-js port, run by the
 * same call runner, with the same errors.
 */
export function connectRoutes(core: LogServiceCore, logger: Logger, observer: CallObserver = noObserver) {
  const logService = implementationOf(LogService, core.handlers, methodAccess, core.auth, logger, observer);
  // OTLP/gRPC exporters pointed at the HTTP port (grpc over h2c) reach the same receiver.
  const logsService = implementationOf(LogsService, core.otlp, otlpMethodAccess, core.auth, logger, observer);
  return (router: ConnectRouter) => {
    router.service(LogService, logService as never);
    router.service(LogsService, logsService as never);
  };
}

/** A Connect implementation of any service whose methods have handlers: Connect reads and writes, the runner runs. */
function implementationOf(
  service: DescService,
  handlers: Record<string, unknown>,
  access: Record<string, Access>,
  auth: Authorizer,
  logger: Logger,
  observer: CallObserver,
): Record<string, unknown> {
  const runner = createCallRunner({ service, handlers, access, auth, logger, observer, transport: "http", transportCode: connectCode });
  const implementation: Record<string, unknown> = {};
  for (const { method, run } of runner.methods) {
    const incoming = (context: HandlerContext) => ({ metadata: headerMetadata(context.requestHeader), signal: context.signal });
    switch (method.methodKind) {
      case "unary":
        implementation[method.localName] = (request: unknown, context: HandlerContext) =>
          unaryReply(run(incoming(context), oneRequest(() => request))).catch((err: unknown) => {
            throw asConnectError(err);
          });
        break;
      case "server_streaming":
        implementation[method.localName] = (request: unknown, context: HandlerContext) =>
          connectStream(run(incoming(context), oneRequest(() => request)));
        break;
      default:
        implementation[method.localName] = (requests: AsyncIterable<unknown>, context: HandlerContext) =>
          connectStream(run(incoming(context), requests));
    }
  }
  return implementation;
}

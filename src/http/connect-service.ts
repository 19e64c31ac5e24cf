import type { DescService } from "@bufbuild/protobuf";
import type { Access, Authorizer } from "../auth/authorizer.js";
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import type { Logger } from "pino";
import { type Code as StatusCode, ReqlogError } from "../reqlog-error.js";
import { type CallObserver, errorDetails, noObserver } from "../service/call-outcome.js";
import { createCallRunner, oneRequest, unaryReply } from "../service/call-runner.js";
import { LogService, type LogServiceCore, LogsService, methodAccess, otlpMethodAccess } from "../service/log-service.js";
import { headerMetadata } from "./header-metadata.js";
import { readRequestKey, readRequestsFirst } from "./request-reader.js";

/**
 * The request of a one-request call: the message reqlog read (Connect was
 * handed an empty one), or its refusal, raised once the runner has opened
 * the call (authenticated and counted); else Connect's.
 */
function requestOf(request: unknown, context: HandlerContext): unknown {
  const read = context.values.get(readRequestKey);
  if (read === undefined) return request;
  if ("error" in read) throw read.error;
  return read.message;
}

/**
 * A stream's requests as Connect decodes them, its failure to decode one in
 * the gRPC port's words: INVALID_ARGUMENT naming the message type (Connect
 * says INTERNAL, "parse binary: …"), so an Ingest that sends bytes that do
 * not decode is answered alike on both ports.
 */
async function* decodedRequests(requests: AsyncIterable<unknown>, typeName: string): AsyncIterable<unknown> {
  try {
    yield* requests;
  } catch (err) {
    const failure = ConnectError.from(err);
    const parse = /^parse (?:binary|JSON): (.*)$/s.exec(failure.rawMessage);
    if (failure.code === Code.Internal && parse) throw ReqlogError.invalid(`cannot decode ${typeName}: ${parse[1]}`);
    throw err;
  }
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

/**
 * A stream's replies, its failure (mid-stream too) as a ConnectError with
 * the same details as a unary call's. When the caller goes away the replies
 * are ended at once: Connect may be stuck writing the last one to a client
 * that stopped reading (its write waits for a drain that never comes, and it
 * never asks for the next), so the handler's `finally` would never run and a
 * Tail would hold its slot for good.
 */
async function* connectStream(replies: AsyncIterable<unknown>, signal: AbortSignal): AsyncIterable<unknown> {
  const iterator = replies[Symbol.asyncIterator]();
  const end = () => void iterator.return?.(undefined).catch(() => {});
  signal.addEventListener("abort", end, { once: true });
  try {
    for (;;) {
      const next = await iterator.next();
      if (next.done) return;
      yield next.value;
    }
  } catch (err) {
    throw asConnectError(err);
  } finally {
    signal.removeEventListener("abort", end);
    end();
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
    // Calls of one request: reqlog reads it, as the gRPC port does (request-reader.ts).
    readRequestsFirst(router.handlers, { auth: core.auth, maxMessageBytes: core.limits.maxMessageBytes });
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
          unaryReply(run(incoming(context), oneRequest(() => requestOf(request, context)))).catch((err: unknown) => {
            throw asConnectError(err);
          });
        break;
      case "server_streaming":
        implementation[method.localName] = (request: unknown, context: HandlerContext) =>
          connectStream(run(incoming(context), oneRequest(() => requestOf(request, context))), context.signal);
        break;
      default:
        implementation[method.localName] = (requests: AsyncIterable<unknown>, context: HandlerContext) =>
          connectStream(run(incoming(context), decodedRequests(requests, method.input.typeName)), context.signal);
    }
  }
  return implementation;
}

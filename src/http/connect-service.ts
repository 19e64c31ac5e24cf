import type { DescMethod, DescService } from "@bufbuild/protobuf";
import type { Access, Authorizer } from "../auth/authorizer.js";
import { type Code, ConnectError, type ConnectRouter, decodeBinaryHeader, type HandlerContext } from "@connectrpc/connect";
import type { Logger } from "pino";
import { Code as StatusCode, ReqlogError } from "../reqlog-error.js";
import { type CallMetadata, type OpenCall, openCall } from "../service/call-context.js";
import { type CallObserver, callFailure, errorDetails, noObserver } from "../service/call-outcome.js";
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

/**
 * Runs `work` as one call of `method`: the observer sees it start and end
 * with its code, and whatever it throws leaves as a logged ConnectError.
 */
async function observed<T>(method: DescMethod, observer: CallObserver, logger: Logger, work: () => Promise<T>): Promise<T> {
  const end = observer.start(method.parent.typeName, method.name, method.methodKind, "http");
  try {
    const result = await work();
    end(StatusCode.OK);
    return result;
  } catch (err) {
    if (err instanceof ConnectError) {
      // Refused by Connect itself (a request that did not decode): pass it on.
      end(err.code as number as StatusCode);
      throw err;
    }
    const error = callFailure(err, method.name, logger);
    end(error.code);
    throw toConnectError(error);
  }
}

/** Yields a handler's replies, each once the handler has authorized the call. */
async function* authorized<T>(replies: AsyncIterable<T>, opened: OpenCall): AsyncIterable<T> {
  for await (const reply of replies) {
    opened.assertAuthorized();
    yield reply;
  }
}

/**
 * An async generator that runs `stream` as one observed call: Connect pulls
 * the replies (and stops pulling while the client does not read); a failure
 * at any point, mid-stream too, ends the stream with the same error
 * details as a unary call.
 */
async function* observedStream<T>(
  method: DescMethod,
  observer: CallObserver,
  logger: Logger,
  stream: () => Promise<AsyncIterable<T>>,
): AsyncIterable<T> {
  const end = observer.start(method.parent.typeName, method.name, method.methodKind, "http");
  // Stays CANCELLED unless the stream ends or fails: Connect returns the generator when the client goes away.
  let code: StatusCode = StatusCode.CANCELLED;
  try {
    yield* await stream();
    code = StatusCode.OK;
  } catch (err) {
    const error = callFailure(err, method.name, logger);
    code = error.code;
    throw toConnectError(error);
  } finally {
    end(code);
  }
}

type Unary = (request: unknown, context: unknown) => Promise<unknown>;
type Streaming = (request: unknown, context: unknown) => AsyncIterable<unknown>;

/**
 * The LogService on a Connect router (Connect, gRPC-Web and gRPC, over
 * HTTP/1.1 and HTTP/2): the same handlers as the grpc-js port, authenticated
 * once per call by openCall, with the same errors.
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

/** A Connect implementation of any service whose methods have handlers. */
function implementationOf(
  service: DescService,
  handlers: Record<string, unknown>,
  accessOf: Record<string, Access>,
  auth: Authorizer,
  logger: Logger,
  observer: CallObserver,
): Record<string, unknown> {
  const implementation: Record<string, unknown> = {};
  for (const method of service.methods) {
    const name = method.localName;
    const access = accessOf[name]!;
    const open = (context: HandlerContext) =>
      openCall(auth, access, headerMetadata(context.requestHeader), context.signal);
    if (method.methodKind === "unary") {
      const handler = handlers[name] as Unary;
      implementation[name] = (request: unknown, context: HandlerContext) =>
        observed(method, observer, logger, async () => {
          const opened = await open(context);
          const reply = await handler(request, opened.context);
          opened.assertAuthorized();
          return reply;
        });
    } else if (method.methodKind === "server_streaming" || method.methodKind === "bidi_streaming") {
      const handler = handlers[name] as Streaming;
      implementation[name] = (input: unknown, context: HandlerContext) =>
        observedStream(method, observer, logger, async () => {
          const opened = await open(context);
          return authorized(handler(input, opened.context), opened);
        });
    } else {
      throw ReqlogError.from(new Error(`${service.name}.${method.name}: ${method.methodKind} methods are not served`));
    }
  }
  return implementation;
}

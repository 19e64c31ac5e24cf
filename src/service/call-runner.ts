import type { DescMethod, DescService } from "@bufbuild/protobuf";
import type { Logger } from "pino";
import type { Access, Authorizer } from "../auth/authorizer.js";
import type { CallMetadata } from "../domain/call-metadata.js";
import { Code, type ReqlogError } from "../reqlog-error.js";
import { type OpenCall, openCall } from "./call-context.js";
import { type CallObserver, callFailure, noObserver } from "./call-outcome.js";

/** A call as a transport hands it to the runner: its metadata, its cancellation, and the I/O hooks it needs. */
export interface IncomingCall {
  readonly metadata: CallMetadata;
  /** Aborted when the caller cancels, its deadline passes or the server stops the call. */
  readonly signal: AbortSignal;
  /** Sends the response headers: called once a stream's handler is in place (a Tail subscribed). */
  readonly ready?: () => void;
  /**
   * Whether the transport saw the call cancelled: a call that ends cancelled is observed as CANCELLED whatever
   * the handler did (grpc-js streams, whose reset HTTP/2 stream takes no status).
   */
  readonly cancelled?: () => boolean;
}

/**
 * One method served: every kind of call (unary, server stream, bidi stream) turned into one transform of
 * requests into replies, so that a transport only reads requests and writes replies. A unary call takes one
 * request and yields one reply.
 */
export interface MethodRunner {
  readonly method: DescMethod;
  /**
   * Runs one call: opens it (authentication and the call context), runs the handler, checks the handler
   * authorized the call before each reply leaves, reports the call to the observer, and turns whatever is
   * thrown into a logged ReqlogError (an error the transport raised itself passes as it is). When the
   * transport stops pulling replies (the caller went away) the handler's iterator is returned and the call is
   * observed as CANCELLED.
   */
  run(call: IncomingCall, requests: AsyncIterable<unknown>): AsyncIterable<unknown>;
}

/** Every method of one service, as a transport serves them. */
export interface CallRunner {
  readonly service: DescService;
  readonly methods: readonly MethodRunner[];
  /** The runner of a method by its local name (`read`, `export`). */
  method(localName: string): MethodRunner;
}

export interface CallRunnerOptions {
  service: DescService;
  /** The handler of each method, by local name (`UnaryHandler`, `ServerStreamHandler`, `BidiStreamHandler`). */
  handlers: Record<string, unknown>;
  /** The access each method needs, by local name. */
  access: Record<string, Access>;
  auth: Authorizer;
  logger: Logger;
  /** The transport's name as observers see it ("grpc", "http"). */
  transport: string;
  observer?: CallObserver;
  /** Methods whose requests a transport may hand over as bytes: turns them into the message the handler takes. */
  decoders?: Partial<Record<string, (bytes: Uint8Array) => Promise<unknown>>>;
  /** The status code of an error the transport raised itself (a message Connect could not decode), sent as it is. */
  transportCode?: (err: unknown) => Code | undefined;
}

type Unary = (request: unknown, context: unknown) => Promise<unknown>;
type Streaming = (request: unknown, context: unknown) => AsyncIterable<unknown>;

/** The one request of a unary or server-streaming call. */
async function onlyRequest(requests: AsyncIterable<unknown>): Promise<unknown> {
  for await (const request of requests) return request;
  throw new Error("the call carried no request");
}

/** Yields a handler's replies, each once the handler has authorized the call. */
async function* authorized(replies: AsyncIterable<unknown>, opened: OpenCall): AsyncIterable<unknown> {
  for await (const reply of replies) {
    opened.assertAuthorized();
    yield reply;
  }
}

/**
 * The one call runner of every transport (grpc-js, Connect, OTLP/HTTP), after connect-es's
 * `invoke-implementation.ts`: for each method, the sequence every call goes through, whatever its kind.
 */
export function createCallRunner(options: CallRunnerOptions): CallRunner {
  const { service, logger, auth } = options;
  const observer = options.observer ?? noObserver;
  const decoders = options.decoders ?? {};

  function methodRunner(method: DescMethod): MethodRunner {
    const name = method.localName;
    const access = options.access[name]!;
    const handler = options.handlers[name];
    const decode = decoders[name];
    const prepared = async (request: unknown) =>
      decode && request instanceof Uint8Array ? await decode(request) : request;
    async function* decodedAll(requests: AsyncIterable<unknown>): AsyncIterable<unknown> {
      for await (const request of requests) yield await prepared(request);
    }

    let transform: (opened: OpenCall, requests: AsyncIterable<unknown>) => AsyncIterable<unknown>;
    switch (method.methodKind) {
      case "unary":
        transform = async function* (opened, requests) {
          const reply = await (handler as Unary)(await prepared(await onlyRequest(requests)), opened.context);
          opened.assertAuthorized();
          yield reply;
        };
        break;
      case "server_streaming":
        transform = async function* (opened, requests) {
          const request = await prepared(await onlyRequest(requests));
          yield* authorized((handler as Streaming)(request, opened.context), opened);
        };
        break;
      case "bidi_streaming":
        transform = (opened, requests) => authorized((handler as Streaming)(decodedAll(requests), opened.context), opened);
        break;
      default:
        throw new Error(`${service.name}.${method.name}: ${method.methodKind} methods are not served`);
    }

    return {
      method,
      async *run(call, requests) {
        const end = observer.start(service.typeName, method.name, method.methodKind, options.transport);
        // Stays CANCELLED unless the call ends or fails: a transport stops pulling when the caller goes away.
        let code: Code = Code.CANCELLED;
        try {
          const opened = await openCall(auth, access, call.metadata, call.signal, call.ready);
          yield* transform(opened, requests);
          code = call.cancelled?.() ? Code.CANCELLED : Code.OK;
        } catch (err) {
          const own = options.transportCode?.(err);
          if (own !== undefined) {
            code = own;
            throw err;
          }
          const error: ReqlogError = callFailure(err, method.name, logger);
          code = call.cancelled?.() ? Code.CANCELLED : error.code;
          throw error;
        } finally {
          end(code);
        }
      },
    };
  }

  const methods = service.methods.map(methodRunner);
  const byName = new Map(methods.map((m) => [m.method.localName, m]));
  return {
    service,
    methods,
    method(localName) {
      const runner = byName.get(localName);
      if (!runner) throw new Error(`${service.name} has no method ${localName}`);
      return runner;
    },
  };
}

/** The only reply of a unary call run by a MethodRunner (pulled to the end, so the call is observed as ended first). */
export async function unaryReply(replies: AsyncIterable<unknown>): Promise<unknown> {
  let reply: unknown;
  for await (const value of replies) reply = value;
  return reply;
}

/** A unary or server-streaming call's one request, as the runner takes it (read when the runner asks for it). */
export async function* oneRequest(request: () => unknown | Promise<unknown>): AsyncIterable<unknown> {
  yield await request();
}

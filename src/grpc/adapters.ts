import {
  Metadata,
  type ServerDuplexStream,
  type sendUnaryData,
  type ServerUnaryCall,
  type ServerWritableStream,
  type UntypedHandleCall,
  type UntypedServiceImplementation,
} from "@grpc/grpc-js";
import type { Logger } from "pino";
import { Code } from "../reqlog-error.js";
import { type CallMetadata, type OpenCall, openCall } from "../service/call-context.js";
import { type CallObserver, noObserver } from "../service/call-outcome.js";
import type { DescService } from "@bufbuild/protobuf";
import type { Access, Authorizer } from "../auth/authorizer.js";
import { type LogServiceCore, LogService, methodAccess } from "../service/log-service.js";
import type { Decoded } from "./service-definition.js";
import { failure } from "./status-metadata.js";

/** The parts of a grpc-js call every kind of call has. */
interface AnyCall {
  readonly cancelled: boolean;
  readonly metadata: Metadata;
  once(event: "cancelled", listener: () => void): unknown;
}

function callMetadata(metadata: Metadata): CallMetadata {
  return { get: (key) => metadata.get(key) as (string | Uint8Array)[] };
}

/** Aborted when grpc-js reports the call cancelled (by the client, its deadline, or a forced shutdown). */
function cancellation(call: AnyCall): AbortSignal {
  const controller = new AbortController();
  if (call.cancelled) controller.abort();
  else call.once("cancelled", () => controller.abort());
  return controller.signal;
}

function decoded<T>(message: Decoded<T>): T {
  if (!message.ok) throw message.error;
  return message.message;
}

/**
 * Writes one message and resolves once grpc-js has handed it to HTTP/2 (its
 * flow control holds the callback back while the client does not read), or
 * when the call ends: the stream's next message is produced only then.
 */
function send(call: ServerWritableStream<unknown, unknown>, message: unknown, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const ended = () => resolve();
    signal.addEventListener("abort", ended, { once: true });
    call.write(message, (err?: Error | null) => {
      signal.removeEventListener("abort", ended);
      if (err) reject(err);
      else resolve();
    });
  });
}

/**
 * Pulls a handler's replies one at a time and writes each under flow control;
 * the handler is authorized before its first reply goes out. When the call
 * ends early the iterator is returned, so the handler's `finally` runs.
 */
async function pump(replies: AsyncIterable<unknown>, open: OpenCall, call: ServerWritableStream<unknown, unknown>) {
  const { signal } = open.context;
  const iterator = replies[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await iterator.next();
      if (next.done || signal.aborted) return;
      open.assertAuthorized();
      await send(call, next.value, signal);
      if (signal.aborted) return;
    }
  } finally {
    await iterator.return?.();
  }
}

/**
 * How a stream's outcome reaches the client: a normal end, or the error's
 * status with its ErrorInfo (mid-stream too). A cancelled call is over
 * already: nothing more is written to its reset HTTP/2 stream.
 */
function finishStream(
  call: ServerWritableStream<unknown, unknown>,
  work: Promise<void>,
  method: string,
  logger: Logger,
  finish: (code: Code) => void,
) {
  work.then(
    () => {
      finish(call.cancelled ? Code.CANCELLED : Code.OK);
      if (!call.cancelled && !call.writableEnded) call.end();
    },
    (err: unknown) => {
      const status = failure(err, method, logger);
      finish(call.cancelled ? Code.CANCELLED : (status.code as Code));
      if (!call.cancelled) call.emit("error", status);
    },
  );
}

/**
 * Decoded requests of a client stream, as an AsyncIterable (those left as bytes decoded by `decode`, when the
 * method's are decoded off the main thread); a request that did not decode fails the stream.
 * Not destroyed when the requests end or the handler stops reading: the replies and the status still go out on it.
 */
async function* requestsOf<T>(
  call: ServerDuplexStream<Decoded<T>, unknown>,
  decode?: (bytes: Uint8Array) => Promise<unknown>,
): AsyncIterable<unknown> {
  for await (const message of call.iterator({ destroyOnReturn: false }) as AsyncIterable<Decoded<T>>) {
    const request = decoded(message);
    yield decode && request instanceof Uint8Array ? await decode(request) : request;
  }
}

/** A CallObserver that counts the calls being served, so that a shutdown knows when none is left. */
export interface CallCounter extends CallObserver {
  /** Resolves once no call is being served. */
  idle(): Promise<void>;
}

export function createCallCounter(): CallCounter {
  let active = 0;
  const waiters: (() => void)[] = [];
  return {
    start() {
      active++;
      return () => {
        if (--active === 0) for (const wake of waiters.splice(0)) wake();
      };
    },
    idle: () => (active === 0 ? Promise.resolve() : new Promise((resolve) => waiters.push(resolve))),
  };
}

/**
 * The grpc-js implementation of the LogService: for every method, the call
 * is authenticated once (openCall), its handler run with a transport-free
 * context, and every failure, unary or mid-stream, becomes a status with
 * ErrorInfo through `failure` (which also logs it).
 */
export function grpcImplementation(
  core: LogServiceCore,
  logger: Logger,
  observer: CallObserver = noObserver,
): UntypedServiceImplementation {
  return serviceImplementation(LogService, core.handlers, methodAccess, core.auth, logger, observer, core.decoders);
}

/** The grpc-js implementation of any service whose methods have handlers (OTLP's LogsService too). */
export function serviceImplementation(
  service: DescService,
  handlers: Record<string, unknown>,
  accessOf: Record<string, Access>,
  auth: Authorizer,
  logger: Logger,
  observer: CallObserver = noObserver,
  decoders: Partial<Record<string, (bytes: Uint8Array) => Promise<unknown>>> = {},
): UntypedServiceImplementation {
  const implementation: UntypedServiceImplementation = {};
  for (const method of service.methods) {
    const name = method.localName;
    const access = accessOf[name]!;
    const begin = () => observer.start(method.parent.typeName, method.name, method.methodKind, "grpc");
    const open = (call: AnyCall, signal: AbortSignal, onReady?: () => void) =>
      openCall(auth, access, callMetadata(call.metadata), signal, onReady);
    let handle: UntypedHandleCall;
    switch (method.methodKind) {
      case "unary": {
        const handler = handlers[name] as (req: unknown, ctx: unknown) => Promise<unknown>;
        const decode = decoders[name];
        handle = (call: ServerUnaryCall<Decoded<unknown>, unknown>, callback: sendUnaryData<unknown>) => {
          const signal = cancellation(call);
          const finish = begin();
          (async () => {
            const opened = await open(call, signal);
            const message = decoded(call.request);
            const request = decode && message instanceof Uint8Array ? await decode(message) : message;
            const reply = await handler(request, opened.context);
            opened.assertAuthorized();
            return reply;
          })().then(
            (reply) => {
              finish(Code.OK);
              callback(null, reply);
            },
            (err: unknown) => {
              const status = failure(err, method.name, logger);
              finish(status.code as Code);
              callback(status);
            },
          );
        };
        break;
      }
      case "server_streaming": {
        const handler = handlers[name] as (req: unknown, ctx: unknown) => AsyncIterable<unknown>;
        handle = (call: ServerWritableStream<Decoded<unknown>, unknown>) => {
          const signal = cancellation(call);
          const finish = begin();
          const stream = call as ServerWritableStream<unknown, unknown>;
          const work = (async () => {
            // Response headers go out when the handler is in place (a Tail subscribed).
            const opened = await open(call, signal, () => call.sendMetadata(new Metadata()));
            await pump(handler(decoded(call.request), opened.context), opened, stream);
          })();
          finishStream(stream, work, method.name, logger, finish);
        };
        break;
      }
      case "bidi_streaming": {
        const handler = handlers[name] as (req: AsyncIterable<unknown>, ctx: unknown) => AsyncIterable<unknown>;
        handle = (call: ServerDuplexStream<Decoded<unknown>, unknown>) => {
          const signal = cancellation(call);
          const finish = begin();
          const stream = call as unknown as ServerWritableStream<unknown, unknown>;
          const work = (async () => {
            const opened = await open(call, signal, () => call.sendMetadata(new Metadata()));
            await pump(handler(requestsOf(call, decoders[name]), opened.context), opened, stream);
          })();
          finishStream(stream, work, method.name, logger, finish);
        };
        break;
      }
      default:
        throw new Error(`${service.name}.${method.name}: ${method.methodKind} methods are not served`);
    }
    implementation[method.localName] = handle;
  }
  return implementation;
}

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
import type { CallMetadata } from "../domain/call-metadata.js";
import type { ReqlogError } from "../reqlog-error.js";
import { type CallObserver, noObserver } from "../service/call-outcome.js";
import { createCallRunner, oneRequest, unaryReply } from "../service/call-runner.js";
import type { DescService } from "@bufbuild/protobuf";
import type { Access, Authorizer } from "../auth/authorizer.js";
import { type LogServiceCore, LogService, methodAccess } from "../service/log-service.js";
import type { Decoded } from "./service-definition.js";
import { toServiceError } from "./status-metadata.js";

/** The parts of a grpc-js call every kind of call has. */
interface AnyCall {
  readonly cancelled: boolean;
  readonly metadata: Metadata;
  once(event: "cancelled", listener: () => void): unknown;
}

/** A server or bidi stream of grpc-js, as far as serving it goes. */
interface StreamCall extends AnyCall {
  sendMetadata(metadata: Metadata): void;
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
 * Pulls a call's replies one at a time and writes each under flow control.
 * A write that fails is thrown into the runner (which logs it and ends the
 * call with it); when the call ends early the iterator is returned, so the
 * handler's `finally` runs.
 */
async function pump(replies: AsyncIterable<unknown>, call: ServerWritableStream<unknown, unknown>, signal: AbortSignal) {
  const iterator = replies[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await iterator.next();
      if (next.done || signal.aborted) return;
      try {
        await send(call, next.value, signal);
      } catch (err) {
        if (!iterator.throw) throw err;
        await iterator.throw(err);
      }
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
function finishStream(call: ServerWritableStream<unknown, unknown>, work: Promise<void>) {
  work.then(
    () => {
      if (!call.cancelled && !call.writableEnded) call.end();
    },
    (err: unknown) => {
      if (!call.cancelled) call.emit("error", toServiceError(err as ReqlogError));
    },
  );
}

/**
 * Decoded requests of a client stream, as an AsyncIterable; a request that did not decode fails the stream.
 * Not destroyed when the requests end or the handler stops reading: the replies and the status still go out on it.
 */
async function* requestsOf<T>(call: ServerDuplexStream<Decoded<T>, unknown>): AsyncIterable<unknown> {
  for await (const message of call.iterator({ destroyOnReturn: false }) as AsyncIterable<Decoded<T>>) {
    yield decoded(message);
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
 * The grpc-js implementation of the LogService: each call is read from and
 * written to grpc-js here, and run by the service's call runner (which
 * authenticates it, runs its handler and turns every failure, unary or
 * mid-stream, into a logged ReqlogError, sent here as a status with ErrorInfo).
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
  access: Record<string, Access>,
  auth: Authorizer,
  logger: Logger,
  observer: CallObserver = noObserver,
  decoders: Partial<Record<string, (bytes: Uint8Array) => Promise<unknown>>> = {},
): UntypedServiceImplementation {
  const runner = createCallRunner({ service, handlers, access, auth, logger, observer, decoders, transport: "grpc" });
  const implementation: UntypedServiceImplementation = {};
  for (const { method, run } of runner.methods) {
    const serveStream = (call: StreamCall, requests: AsyncIterable<unknown>) => {
      const signal = cancellation(call);
      const incoming = {
        metadata: callMetadata(call.metadata),
        signal,
        // Response headers go out when the handler is in place (a Tail subscribed).
        ready: () => call.sendMetadata(new Metadata()),
        cancelled: () => call.cancelled,
      };
      const stream = call as unknown as ServerWritableStream<unknown, unknown>;
      finishStream(stream, pump(run(incoming, requests), stream, signal));
    };
    let handle: UntypedHandleCall;
    switch (method.methodKind) {
      case "unary":
        handle = (call: ServerUnaryCall<Decoded<unknown>, unknown>, callback: sendUnaryData<unknown>) => {
          const incoming = { metadata: callMetadata(call.metadata), signal: cancellation(call) };
          unaryReply(run(incoming, oneRequest(() => decoded(call.request)))).then(
            (reply) => callback(null, reply),
            (err: unknown) => callback(toServiceError(err as ReqlogError)),
          );
        };
        break;
      case "server_streaming":
        handle = (call: ServerWritableStream<Decoded<unknown>, unknown>) =>
          serveStream(call, oneRequest(() => decoded(call.request)));
        break;
      case "bidi_streaming":
        handle = (call: ServerDuplexStream<Decoded<unknown>, unknown>) => serveStream(call, requestsOf(call));
        break;
      default:
        throw new Error(`${service.name}.${method.name}: ${method.methodKind} methods are not served`);
    }
    implementation[method.localName] = handle;
  }
  return implementation;
}

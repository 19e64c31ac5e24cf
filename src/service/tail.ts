import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import { create } from "@bufbuild/protobuf";
import { type LogReadRequest, type LogReadResponse, LogReadResponseSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { exceeded } from "../limits.js";
import { planRead } from "../query/read-plan.js";
import { ReqlogError } from "../reqlog-error.js";
import type { ServerStreamHandler } from "./call-context.js";
import type { HandlerDeps } from "./service-deps.js";

/** Records examined per query while a tail catches up. */
const batchSize = 256;

export interface TailService {
  /** Follows one Tail call until the client cancels or the server ends it. */
  follow: ServerStreamHandler<LogReadRequest, LogReadResponse>;
  /** Ends every open tail (server shutdown): each stream ends normally. */
  endAll(): void;
  /** Tails open now. */
  open(): number;
}

/** Resolves at the next `wake()` or when `signal` aborts, whichever is first. */
function createWaker(signal: AbortSignal) {
  let pending = true; // the first wait returns at once: catch up on what came before
  let resolveWait: (() => void) | undefined;
  signal.addEventListener("abort", () => resolveWait?.(), { once: true });
  return {
    wake() {
      pending = true;
      resolveWait?.();
    },
    async wait(): Promise<void> {
      while (!pending && !signal.aborted) await new Promise<void>((resolve) => (resolveWait = resolve));
      resolveWait = undefined;
      pending = false;
    },
  };
}

/**
 * Tail: after each commit, every open tail reads the records of its app
 * changed since the last change it delivered and yields those that match.
 * A tail keeps no queue: the transport pulls the next message only once the
 * last one has gone out under flow control, and only then is the next batch
 * read, so a slow reader lags behind (reading from the store as it catches
 * up) instead of growing server memory.
 */
export function createTailService({ store, limits, offsets: offsetCodec }: HandlerDeps): TailService {
  const open = new Set<AbortController>();
  /** Open tails by the id of the token that opened them. */
  const perToken = new Map<number, number>();

  async function* follow(request: LogReadRequest, call: Parameters<TailService["follow"]>[1]) {
    if (request.requestId.length > 0 || request.offset) {
      throw ReqlogError.invalid("Tail follows new records: request_id and offset are not accepted");
    }
    const plan = planRead(request, limits, await offsetCodec());
    call.authorize([plan.appId]);
    if (open.size >= limits.maxTails) throw exceeded(limits, "maxTails", open.size + 1, "number of open Tail calls");
    // A token's share of the pool: one reader cannot take every tail. Open servers (loopback, no tokens) have one caller.
    const owner = call.principal.kind === "token" ? call.principal.token.id : undefined;
    const owned = owner === undefined ? 0 : (perToken.get(owner) ?? 0);
    if (owner !== undefined && owned >= limits.maxTailsPerToken) {
      throw exceeded(limits, "maxTailsPerToken", owned + 1, "number of open Tail calls of this token", "end one first");
    }

    // Ended by the caller (cancel, deadline) or by the server (shutdown).
    const ended = new AbortController();
    const signal = AbortSignal.any([call.signal, ended.signal]);
    open.add(ended);
    if (owner !== undefined) perToken.set(owner, owned + 1);
    try {
      const waker = createWaker(signal);
      await store.subscribe(waker.wake, signal);
      let position = await store.changePosition(signal);
      // The tail is in place: the client may now write and expect to see it.
      call.ready();
      for (;;) {
        await waker.wait();
        if (signal.aborted) return;
        for (;;) {
          const changes = await store.changes(plan, position, batchSize, signal);
          position = changes.position;
          if (changes.records.length > 0) yield create(LogReadResponseSchema, { log: changes.records });
          if (changes.caughtUp || signal.aborted) break;
          await yieldToEventLoop(); // let writes in between catch-up batches
        }
      }
    } catch (err) {
      // A tail ended while it read is over, not failed.
      if (signal.aborted) return;
      throw err;
    } finally {
      open.delete(ended);
      if (owner !== undefined) {
        const left = perToken.get(owner)! - 1;
        if (left === 0) perToken.delete(owner);
        else perToken.set(owner, left);
      }
      ended.abort(); // unsubscribes
    }
  }

  return {
    follow,
    endAll() {
      for (const tail of open) tail.abort();
    },
    open: () => open.size,
  };
}

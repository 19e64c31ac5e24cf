import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import { create } from "@bufbuild/protobuf";
import { Metadata, type ServerWritableStream } from "@grpc/grpc-js";
import { type LogReadRequest, type LogReadResponse, LogReadResponseSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { exceeded } from "../limits.js";
import { createOffsetCodec } from "../query/offset-codec.js";
import { planRead } from "../query/read-plan.js";
import { ReqlogError } from "../reqlog-error.js";
import type { ServiceDeps } from "./handler.js";

/** Records examined per query while a tail catches up. */
const batchSize = 256;

export type TailCall = ServerWritableStream<unknown, LogReadResponse>;

export interface TailService {
  /** Follows one Tail call until the client cancels or the server ends it. */
  follow(request: LogReadRequest, call: TailCall): Promise<void>;
  /** Ends every open tail (server shutdown). */
  endAll(): void;
  /** Open tails, and the most messages any of them has not yet sent (at most one). */
  stats(): { open: number; maxUnsent: number };
}

/**
 * Tail: after each commit, every open tail reads the records of its app
 * changed since the last change it delivered (by sequence number) and sends
 * those that match. A tail keeps no queue: it has at most one message in
 * flight and reads the next batch only when that one has been sent, so a
 * slow reader lags behind (reading from the database as it catches up)
 * instead of growing server memory.
 */
export function createTailService({ store, limits, auth }: ServiceDeps): TailService {
  const offsets = createOffsetCodec(store.offsetKey());
  const open = new Set<TailCall>();
  /** Messages written to each tail's stream and not yet handed to the socket. */
  const unsent = new WeakMap<TailCall, number>();

  async function follow(request: LogReadRequest, call: TailCall): Promise<void> {
    const principal = auth.authenticate(call.metadata);
    if (request.requestId.length > 0 || request.offset) {
      throw ReqlogError.invalid("Tail follows new records: request_id and offset are not accepted");
    }
    const plan = planRead(request, limits, offsets);
    auth.authorize(principal, "read", [plan.appId]);
    if (open.size >= limits.maxTails) throw exceeded(limits, "maxTails", open.size + 1, "number of open Tail calls");

    let lastSeq = store.currentSeq();
    let ended = false;
    let pumping = false;
    let again = false;
    const finished = new Promise<void>((resolve) => {
      const end = () => {
        if (ended) return;
        ended = true;
        unsubscribe();
        open.delete(call);
        resolve();
      };
      call.on("cancelled", end);
      call.on("close", end);
      call.on("error", end);
      call.on("finish", end);
    });
    const unsubscribe = store.onCommit(() => void pump());
    open.add(call);
    // Headers now: the client knows the tail is in place before any record.
    call.sendMetadata(new Metadata());

    async function pump(): Promise<void> {
      if (pumping) {
        again = true;
        return;
      }
      pumping = true;
      try {
        do {
          again = false;
          while (!ended) {
            const { records, lastSeq: next } = store.changes(plan, lastSeq, batchSize);
            const caughtUp = next >= store.currentSeq();
            lastSeq = next;
            if (records.length > 0) {
              // One message in flight per tail: the next batch is read only
              // once this one has gone out under HTTP/2 flow control.
              unsent.set(call, (unsent.get(call) ?? 0) + 1);
              const sent = new Promise<void>((resolve) =>
                call.write(create(LogReadResponseSchema, { log: records }), () => {
                  unsent.set(call, (unsent.get(call) ?? 1) - 1);
                  resolve();
                }),
              );
              await Promise.race([sent, finished]);
            }
            if (caughtUp) break;
            await yieldToEventLoop(); // let writes in between catch-up batches
          }
        } while (again && !ended);
      } catch (err) {
        if (!ended) call.destroy(err instanceof Error ? err : new Error(String(err)));
      } finally {
        pumping = false;
      }
    }

    await finished;
  }

  return {
    follow,
    endAll() {
      for (const call of open) call.end();
    },
    stats() {
      let maxUnsent = 0;
      for (const call of open) maxUnsent = Math.max(maxUnsent, unsent.get(call) ?? 0);
      return { open: open.size, maxUnsent };
    },
  };
}

import { setTimeout as delay } from "node:timers/promises";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  type IngestAck,
  type IngestRequest,
  IngestRequestSchema,
  type RequestLog,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { callFailure, type LogServiceClient } from "../client/log-service-client.js";

/** Records to send as one Ingest batch, and what its acknowledgement confirms (a file position). */
export interface OutgoingBatch<M> {
  records: RequestLog[];
  meta: M;
}

export interface IngestSenderOptions {
  /** A client of the server; a new one is made for each attempt after a failure. */
  connect: () => LogServiceClient;
  /** Batches sent and not yet acknowledged, at most (default 4). */
  window?: number;
  /**
   * How long to keep retrying while the server cannot be reached (or is
   * unavailable) without an acknowledgement in between; Infinity: for ever.
   */
  retryForMs?: number;
  /** First and largest wait between attempts (default 250 ms, 30 s); each failure doubles it, with jitter. */
  backoffMs?: { first: number; max: number };
  /** Told of each failure that will be retried, and how long until the next attempt. */
  onRetry?: (reason: string, delayMs: number) => void;
  /** Once aborted, no further batch is taken from the source: the sent ones are acknowledged, then it ends. */
  stop?: AbortSignal;
}

/** Codes a retry cannot fix: the server refused the batch, the token, or the call. */
const final = new Set<Code>([
  Code.InvalidArgument,
  Code.Unauthenticated,
  Code.PermissionDenied,
  Code.Unimplemented,
  Code.FailedPrecondition,
  Code.OutOfRange,
  Code.NotFound,
  Code.AlreadyExists,
  Code.DataLoss,
]);

/**
 * Whether a failure is final. INTERNAL is, when the server says so (its
 * statuses carry an ErrorInfo; UNAVAILABLE is what a storage fault that may
 * pass gives): a retry would fail the same way. Without details it is the
 * connection's (Connect reports a broken HTTP/2 session as INTERNAL).
 */
function isFinal(err: unknown): err is ConnectError {
  if (!(err instanceof ConnectError)) return false;
  return final.has(err.code) || (err.code === Code.Internal && err.details.length > 0);
}

function reasonOf(err: unknown): string {
  if (err instanceof ConnectError) return err.rawMessage || `status ${Code[err.code]}`;
  return err instanceof Error ? err.message : String(err);
}

/** Waits `ms`, or less when `signal` aborts. */
const sleep = (ms: number, signal?: AbortSignal) => delay(ms, undefined, { signal }).catch(() => {});

/**
 * Sends batches of records over Ingest and calls `onAck` with each batch's
 * `meta` once the server has committed it, in order. While the server is
 * down or a stream breaks, it reconnects with exponential backoff and sends
 * again every batch not yet acknowledged (records are upserts: a batch the
 * server stored before it broke is stored once). Resolves when the source
 * has ended (or `stop` aborted) and every batch taken from it is
 * acknowledged (after `stop`, batches unacknowledged when a stream fails
 * stay so); rejects when the server refuses a batch (with the server's
 * message) or stays unreachable past `retryForMs`.
 */
export async function sendBatches<M>(
  source: AsyncIterable<OutgoingBatch<M>>,
  onAck: (meta: M, ack: IngestAck) => void | Promise<void>,
  options: IngestSenderOptions,
): Promise<void> {
  const window = options.window ?? 4;
  const backoff = options.backoffMs ?? { first: 250, max: 30_000 };
  const batches = source[Symbol.asyncIterator]();
  type Sent = { request: IngestRequest; meta: M };
  /** Sent on some stream, not acknowledged. */
  const unacked: Sent[] = [];
  /** Of those, the ones the current stream has not sent yet. */
  let resend: Sent[] = [];
  let nextId = 1n;
  let sourceDone = false;
  let attempt = 0;
  let wake: (() => void) | undefined;
  let sourceError: { error: unknown } | undefined;
  let ackError: { error: unknown } | undefined;
  const room = () =>
    unacked.length < window ? Promise.resolve() : new Promise<void>((resolve) => (wake = resolve));
  const wakeUp = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  options.stop?.addEventListener("abort", wakeUp, { once: true });

  async function* requests(mine: number): AsyncGenerator<IngestRequest> {
    for (;;) {
      if (mine !== attempt) return;
      const again = resend.shift();
      if (again) {
        yield again.request;
        continue;
      }
      await room();
      if (mine !== attempt) return;
      if (sourceDone || options.stop?.aborted) return;
      let next: IteratorResult<OutgoingBatch<M>>;
      try {
        next = await batches.next();
      } catch (err) {
        // The source failed (a file could not be read): that ends the sending, not this stream only.
        sourceError = { error: err };
        throw err;
      }
      if (next.done) {
        sourceDone = true;
        return;
      }
      const sent = { request: create(IngestRequestSchema, { batchId: nextId++, log: next.value.records }), meta: next.value.meta };
      unacked.push(sent);
      // A stream that broke while the source was read: the next one sends it.
      if (mine !== attempt) {
        resend.push(sent);
        return;
      }
      yield sent.request;
    }
  }

  let delay = backoff.first;
  let failingSince: number | undefined;
  for (;;) {
    const mine = ++attempt;
    resend = [...unacked];
    const client = options.connect();
    try {
      for await (const ack of client.ingest(requests(mine))) {
        const oldest = unacked[0];
        if (!oldest || oldest.request.batchId !== ack.batchId) {
          throw new Error(`the server acknowledged batch ${ack.batchId}, expected ${oldest?.request.batchId ?? "none"}`);
        }
        unacked.shift();
        wakeUp();
        failingSince = undefined;
        delay = backoff.first;
        try {
          await onAck(oldest.meta, ack);
        } catch (err) {
          ackError = { error: err };
          throw err;
        }
      }
      if (unacked.length === 0 && (sourceDone || options.stop?.aborted)) return;
      throw new ConnectError(`the Ingest stream ended with ${unacked.length} batches unacknowledged`, Code.Unavailable);
    } catch (err) {
      attempt++; // the requests of this stream stop; its unsent batches go to the next
      wakeUp();
      if (sourceError) throw sourceError.error;
      if (ackError) throw ackError.error;
      if (isFinal(err)) throw new Error(callFailure(err), { cause: err });
      // Anything else is the connection's (refused, reset, the server shutting down): try again.
      // Stopping: what is unacknowledged stays so (a file's saved position does not pass it).
      if (options.stop?.aborted) return;
      failingSince ??= Date.now();
      const retryFor = options.retryForMs ?? Infinity;
      if (Date.now() - failingSince >= retryFor) {
        throw new Error(`cannot reach the server for ${Math.round(retryFor / 1000)} s: ${reasonOf(err)}`, { cause: err });
      }
      const wait = Math.min(delay, backoff.max) * (0.75 + Math.random() * 0.5);
      options.onRetry?.(reasonOf(err), wait);
      await sleep(wait, options.stop);
      if (options.stop?.aborted) return;
      delay = Math.min(delay * 2, backoff.max);
    } finally {
      client.close();
    }
  }
}

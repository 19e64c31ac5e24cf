import { create, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  type IngestAck,
  type IngestRequest,
  IngestRequestSchema,
  type RequestLines,
  RequestLinesSchema,
  type RequestLog,
  RequestLogSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import type { EncodedEntry } from "./record-encoder.js";
import { decideFailure, type RetryOptions, retryDelay } from "./retry-policy.js";

/** What a full buffer does with what comes next. */
export type WhenFull = "drop-oldest" | "block";

export interface BatchingOptions {
  /** Records (and line groups) per Ingest batch (default 500; the server takes up to max-records-per-write, 1,000). */
  maxBatchRecords?: number;
  /** Wire bytes per batch (default 1 MiB; the server takes messages up to max-message-bytes, 16 MiB). */
  maxBatchBytes?: number;
  /** A batch that is not full is sent this long after its first record came in (ms, default 100). */
  flushIntervalMs?: number;
  /** Records (and line groups) held at most, sent or not, until acknowledged (default 50,000). */
  maxBufferedRecords?: number;
  /** Wire bytes held at most (default 32 MiB): entries are held encoded, so the heap holds little more. */
  maxBufferedBytes?: number;
  /**
   * When the buffer is full (the service is down or slower than the app):
   * `drop-oldest` (default) drops the oldest records not being sent, counted
   * in stats().dropped; `block` makes `write()` wait for room, while
   * `offer()` (the middleware, which never waits) drops the new record.
   */
  whenFull?: WhenFull;
  /** Batches sent and not yet acknowledged on the stream (default 4). */
  maxInFlight?: number;
  /** The backoff between attempts after failures. */
  retry?: RetryOptions;
  /** A stream whose oldest batch is not acknowledged within this long is dropped and sent again (ms, default 30,000). */
  ackTimeoutMs?: number;
  /** A stream with nothing to send for this long is ended, so that it never holds a server's shutdown (ms, default 1,000). */
  idleMs?: number;
  /** Told of every failed stream and refused record (the logger carries on by itself). */
  onError?: (error: ConnectError) => void;
  /** The jitter's source of randomness (tests). */
  random?: () => number;
}

export interface Counts {
  records: number;
  lines: number;
}

/** What the logger has done so far. Records count RequestLogs; line groups without a record count only their lines. */
export interface LoggerStats {
  /** Held now: not yet acknowledged (sent or not), with their wire bytes. */
  buffered: Counts & { bytes: number };
  /** Sent on a stream, counting every sending (a re-sent batch counts again). */
  sent: Counts & { batches: number };
  /** Acknowledged by the service: stored durably. */
  acknowledged: Counts & { batches: number };
  /** Sent again after a failed stream (included in `sent`). */
  retried: Counts & { batches: number };
  /** Dropped on the client: the buffer was full, the logger was closed, or close() timed out. */
  dropped: Counts;
  /** Refused by the service as invalid, one by one after the batch holding them was split (see onError). */
  refused: Counts;
  /** Streams that failed (each retried after a backoff). */
  failures: number;
  /** The message of the last failure, if any. */
  lastError: string | undefined;
}

/** One Ingest stream: `client.ingest`. */
export type OpenIngest = (batches: AsyncIterable<IngestRequest>, signal: AbortSignal) => AsyncIterable<IngestAck>;

/** A record (with its lines) or lines of a request without their record: a message, or already encoded. */
export type Entry = RequestLog | RequestLines | EncodedEntry;

export interface BatchingLogger {
  /**
   * Buffers an entry, making room under drop-oldest; false when the entry
   * itself was dropped. Never waits. A message missing a required field
   * throws (encoding it needs them all).
   */
  offer(entry: Entry): boolean;
  /**
   * Buffers an entry; under `block` waits for room first. Resolves once it
   * is buffered (not sent: see flush); rejects when it can never fit or the
   * logger is closed.
   */
  write(entry: Entry): Promise<void>;
  /** Sends what is buffered now and resolves once all of it is acknowledged (or dropped, or refused). */
  flush(options?: { timeoutMs?: number }): Promise<void>;
  /**
   * Takes nothing more, drains what is buffered (as flush), then ends the
   * stream. If `timeoutMs` (default 10,000) passes first, what is left is
   * dropped (counted) and close rejects with DEADLINE_EXCEEDED naming it.
   */
  close(options?: { timeoutMs?: number }): Promise<void>;
  stats(): LoggerStats;
}

interface Item {
  /** Order of writing; flush waits for the items written before it. */
  seq: number;
  entry: EncodedEntry;
}

interface Batch {
  id: bigint;
  items: Item[];
  /** Times sent so far. */
  sends: number;
  message: IngestRequest | undefined;
}

interface Stream {
  abort: AbortController;
  /** Batches sent and not acknowledged: always batches[0 .. inFlight). */
  inFlight: number;
  wake: (() => void) | undefined;
  ackTimer: NodeJS.Timeout | undefined;
  /** Settles once the call has ended. */
  ended: Promise<void>;
}

/** A message as the entry it is sent as (the middleware's entries come encoded, see record-encoder.ts). */
function encodeEntry(entry: Entry): EncodedEntry {
  if (!("$typeName" in entry)) return entry;
  const record = entry.$typeName === RequestLogSchema.typeName;
  const body = record ? toBinary(RequestLogSchema, entry as RequestLog) : toBinary(RequestLinesSchema, entry as RequestLines);
  return { field: record ? 2 : 3, data: new BinaryWriter().bytes(body).finish(), record: record ? 1 : 0, lines: entry.line.length };
}

function itemOf(entry: Entry, seq: number): Item {
  return { seq, entry: encodeEntry(entry) };
}

/** A batch as an IngestRequest: its entries, encoded already, go out as they are (as fields protobuf-es does not parse again). */
function messageOf(batch: Batch): IngestRequest {
  const message = create(IngestRequestSchema, { batchId: batch.id });
  message.$unknown = batch.items.map(({ entry }) => ({ no: entry.field, wireType: WireType.LengthDelimited, data: entry.data }));
  return message;
}

const counts = () => ({ records: 0, lines: 0 });

/**
 * Buffers request records and app lines and sends them in batches on one
 * Ingest stream. A batch is sent when it is full (records or bytes) or
 * `flushIntervalMs` after its first entry, and kept until the service
 * acknowledges it (stored durably). When the stream fails the batches not
 * acknowledged are sent again, in order and unchanged, on a new stream after
 * a backoff (exponential with jitter, at least the server's RetryInfo delay):
 * sending a batch twice is harmless, because the service stores records by
 * (app, request id) and app lines by (request, time, position, level,
 * message). A batch the service refuses as invalid is split in halves until
 * the one entry at fault is found, which is dropped (counted as refused and
 * told to onError): one bad record never holds back or takes down the rest.
 * What is held is bounded by records and bytes, with the `whenFull` policy.
 */
export function createBatchingLogger(open: OpenIngest, options: BatchingOptions = {}): BatchingLogger {
  const maxBatchRecords = options.maxBatchRecords ?? 500;
  const maxBatchBytes = options.maxBatchBytes ?? 1024 * 1024;
  const flushIntervalMs = options.flushIntervalMs ?? 100;
  const maxRecords = options.maxBufferedRecords ?? 50_000;
  const maxBytes = options.maxBufferedBytes ?? 32 * 1024 * 1024;
  const whenFull = options.whenFull ?? "drop-oldest";
  const maxInFlight = options.maxInFlight ?? 4;
  const ackTimeoutMs = options.ackTimeoutMs ?? 30_000;
  const idleMs = options.idleMs ?? 1000;
  const onError = options.onError ?? (() => {});

  const stats: LoggerStats = {
    buffered: { ...counts(), bytes: 0 },
    sent: { ...counts(), batches: 0 },
    acknowledged: { ...counts(), batches: 0 },
    retried: { ...counts(), batches: 0 },
    dropped: counts(),
    refused: counts(),
    failures: 0,
    lastError: undefined,
  };

  let pending: Item[] = [];
  let pendingBytes = 0;
  /** Sealed batches not acknowledged, oldest first; a stream's in-flight batches are its prefix. */
  const batches: Batch[] = [];
  /** Writers waiting for room (block). */
  const waiters: { item: Item; resolve: () => void; reject: (err: unknown) => void }[] = [];
  const flushes: { upTo: number; resolve: () => void }[] = [];
  let nextSeq = 0;
  let nextBatchId = 1n;
  let sealTimer: NodeJS.Timeout | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let stream: Stream | undefined;
  /** Failures since the last acknowledgement: the backoff's exponent. */
  let failuresInARow = 0;
  let closing = false;
  let closed = false;
  let closeResult: Promise<void> | undefined;

  const fits = (item: Item) =>
    stats.buffered.records + 1 <= maxRecords && stats.buffered.bytes + item.entry.data.length <= maxBytes;

  function count(into: Counts, items: readonly Item[]): void {
    for (const { entry } of items) {
      into.records += entry.record;
      into.lines += entry.lines;
    }
  }

  function release(items: readonly Item[]): void {
    for (const { entry } of items) {
      stats.buffered.records -= entry.record;
      stats.buffered.lines -= entry.lines;
      stats.buffered.bytes -= entry.data.length;
    }
  }

  /** The oldest item written and not yet acknowledged, dropped or refused. */
  function oldestOutstanding(): number {
    return batches[0]?.items[0]?.seq ?? pending[0]?.seq ?? waiters[0]?.item.seq ?? Infinity;
  }

  /** After anything left the buffer: let waiting writers in, settle flushes. */
  function afterRelease(): void {
    while (waiters.length > 0 && fits(waiters[0]!.item)) {
      const { item, resolve } = waiters.shift()!;
      admit(item);
      resolve();
    }
    const oldest = oldestOutstanding();
    for (let i = flushes.length - 1; i >= 0; i--) {
      if (flushes[i]!.upTo < oldest) flushes.splice(i, 1)[0]!.resolve();
    }
  }

  function seal(): void {
    if (sealTimer) clearTimeout(sealTimer);
    sealTimer = undefined;
    if (pending.length === 0) return;
    batches.push({ id: nextBatchId++, items: pending, sends: 0, message: undefined });
    pending = [];
    pendingBytes = 0;
    kick();
  }

  function admit(item: Item): void {
    const bytes = item.entry.data.length;
    if (pending.length > 0 && pendingBytes + bytes > maxBatchBytes) seal();
    pending.push(item);
    pendingBytes += bytes;
    stats.buffered.records += item.entry.record;
    stats.buffered.lines += item.entry.lines;
    stats.buffered.bytes += bytes;
    if (pending.length >= maxBatchRecords || pendingBytes >= maxBatchBytes) seal();
    else sealTimer ??= setTimeout(seal, flushIntervalMs).unref();
  }

  /** Drops the oldest item that is not on its way (drop-oldest); false when there is none. */
  function dropOldest(): boolean {
    const inFlight = stream?.inFlight ?? 0;
    let victim: Item | undefined;
    if (batches.length > inFlight) {
      const batch = batches[inFlight]!;
      victim = batch.items.shift()!;
      batch.message = undefined;
      if (batch.items.length === 0) batches.splice(inFlight, 1);
    } else if (pending.length > 0) {
      victim = pending.shift()!;
      pendingBytes -= victim.entry.data.length;
    }
    if (!victim) return false;
    release([victim]);
    count(stats.dropped, [victim]);
    return true;
  }

  function dropNew(item: Item): false {
    count(stats.dropped, [item]);
    return false;
  }

  function tooLarge(item: Item): ConnectError {
    return new ConnectError(
      `cannot buffer a record of ${item.entry.data.length} bytes: over maxBufferedBytes=${maxBytes}`,
      Code.ResourceExhausted,
    );
  }

  // ---- the stream ----

  function kick(): void {
    if (stream) {
      stream.wake?.();
      return;
    }
    if (retryTimer || closed || batches.length === 0) return;
    openStream();
  }

  function armAckTimer(s: Stream): void {
    if (s.ackTimer) clearTimeout(s.ackTimer);
    s.ackTimer =
      s.inFlight > 0
        ? setTimeout(
            () => s.abort.abort(new ConnectError(`no acknowledgement within ${ackTimeoutMs} ms`, Code.DeadlineExceeded)),
            ackTimeoutMs,
          ).unref()
        : undefined;
  }

  async function* requests(s: Stream): AsyncGenerator<IngestRequest> {
    while (!s.abort.signal.aborted) {
      const batch = s.inFlight < maxInFlight ? batches[s.inFlight] : undefined;
      if (batch) {
        batch.message ??= messageOf(batch);
        if (batch.sends > 0) {
          stats.retried.batches++;
          count(stats.retried, batch.items);
        }
        batch.sends++;
        stats.sent.batches++;
        count(stats.sent, batch.items);
        s.inFlight++;
        if (s.inFlight === 1) armAckTimer(s);
        yield batch.message;
        continue;
      }
      const idle = s.inFlight === 0 && batches.length === 0;
      const woken = await new Promise<boolean>((resolve) => {
        s.wake = () => resolve(true);
        if (idle) setTimeout(() => resolve(false), closing ? 0 : idleMs).unref();
      });
      s.wake = undefined;
      if (!woken && s.inFlight === 0 && batches.length === 0) return;
    }
  }

  function acknowledge(s: Stream, ack: IngestAck): void {
    const batch = batches[0];
    if (s.inFlight === 0 || !batch || ack.batchId !== batch.id) {
      s.abort.abort(
        new ConnectError(`acknowledgement of batch ${ack.batchId} while batch ${batch?.id} was the oldest sent`, Code.Internal),
      );
      return;
    }
    batches.shift();
    s.inFlight--;
    failuresInARow = 0;
    stats.acknowledged.batches++;
    count(stats.acknowledged, batch.items);
    release(batch.items);
    armAckTimer(s);
    afterRelease();
    s.wake?.();
  }

  /** The service refused batches[0]: split it, or drop its one entry as refused. */
  function refuseFirst(error: ConnectError): void {
    const batch = batches[0]!;
    if (batch.items.length > 1) {
      const half = Math.ceil(batch.items.length / 2);
      batches.splice(
        0,
        1,
        { id: nextBatchId++, items: batch.items.slice(0, half), sends: 0, message: undefined },
        { id: nextBatchId++, items: batch.items.slice(half), sends: 0, message: undefined },
      );
      return;
    }
    batches.shift();
    count(stats.refused, batch.items);
    release(batch.items);
    onError(new ConnectError(`reqlog refused a ${batch.items[0]!.entry.record ? "record" : "group of lines"}: ${error.rawMessage}`, error.code));
    afterRelease();
  }

  function streamEnded(s: Stream, err: unknown): void {
    if (s.ackTimer) clearTimeout(s.ackTimer);
    s.abort.abort();
    s.wake?.();
    stream = undefined;
    if (closed) return;
    if (err === undefined) {
      kick();
      return;
    }
    const decision = decideFailure(err);
    stats.failures++;
    stats.lastError = decision.error.message;
    onError(decision.error);
    if (decision.kind === "refused" && s.inFlight > 0) {
      refuseFirst(decision.error);
      kick();
      return;
    }
    failuresInARow++;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      kick();
    }, retryDelay(failuresInARow, decision.retryAfterMs, options.retry, options.random));
    // An idle process may exit before the retry; one awaiting a flush or a blocked write may not.
    if (flushes.length === 0 && waiters.length === 0) retryTimer.unref();
  }

  function openStream(): void {
    const s: Stream = { abort: new AbortController(), inFlight: 0, wake: undefined, ackTimer: undefined, ended: Promise.resolve() };
    stream = s;
    s.ended = (async () => {
      let failure: unknown;
      try {
        for await (const ack of open(requests(s), s.abort.signal)) acknowledge(s, ack);
        // An acknowledgement that did not match aborted the stream: a failure, though the call ended quietly.
        if (s.abort.signal.aborted) failure = s.abort.signal.reason;
      } catch (err) {
        failure = s.abort.signal.aborted && s.abort.signal.reason !== undefined ? s.abort.signal.reason : err;
      }
      streamEnded(s, failure);
    })();
  }

  // ---- the API ----

  /** Places an item that may not wait: in the buffer, or dropped (the oldest ones, or itself). */
  function place(item: Item): boolean {
    if (closing || item.entry.data.length > maxBytes) return dropNew(item);
    let dropped = false;
    if (!fits(item) || waiters.length > 0) {
      if (whenFull === "block") return dropNew(item);
      while (!fits(item) && dropOldest()) dropped = true;
      if (!fits(item)) return dropNew(item);
    }
    admit(item);
    if (dropped) afterRelease();
    return true;
  }

  function flush(flushOptions: { timeoutMs?: number } = {}): Promise<void> {
    const upTo = nextSeq - 1;
    seal();
    if (oldestOutstanding() > upTo) return Promise.resolve();
    retryTimer?.ref(); // the process waits for the retry, as the caller does
    return new Promise<void>((resolve, reject) => {
      const entry = { upTo, resolve };
      flushes.push(entry);
      if (flushOptions.timeoutMs === undefined) return;
      const timer = setTimeout(() => {
        const i = flushes.indexOf(entry);
        if (i < 0) return;
        flushes.splice(i, 1);
        const { records, lines } = stats.buffered;
        const last = stats.lastError ? ` (last failure: ${stats.lastError})` : "";
        reject(
          new ConnectError(
            `cannot flush: ${records} records and ${lines} lines not acknowledged after ${flushOptions.timeoutMs} ms${last}`,
            Code.DeadlineExceeded,
          ),
        );
      }, flushOptions.timeoutMs);
      entry.resolve = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  function shutDown(): void {
    closed = true;
    if (sealTimer) clearTimeout(sealTimer);
    if (retryTimer) clearTimeout(retryTimer);
    stream?.abort.abort();
    const left = [...batches.flatMap((b) => b.items), ...pending, ...waiters.map((w) => w.item)];
    count(stats.dropped, left);
    release([...batches.flatMap((b) => b.items), ...pending]);
    batches.length = 0;
    pending = [];
    for (const waiter of waiters.splice(0)) waiter.reject(new ConnectError("the logger was closed", Code.Canceled));
    for (const f of flushes.splice(0)) f.resolve();
  }

  return {
    offer: (entry) => place(itemOf(entry, nextSeq++)),

    write(entry) {
      if (closing) return Promise.reject(new ConnectError("cannot write: the logger is closed", Code.FailedPrecondition));
      const item = itemOf(entry, nextSeq++);
      if (item.entry.data.length > maxBytes) return Promise.reject(tooLarge(item));
      if (whenFull === "drop-oldest" || (waiters.length === 0 && fits(item))) {
        place(item);
        return Promise.resolve();
      }
      retryTimer?.ref(); // a blocked write waits for the retry too
      return new Promise((resolve, reject) => waiters.push({ item, resolve, reject }));
    },

    flush,

    close(closeOptions = {}) {
      closeResult ??= (async () => {
        closing = true;
        try {
          await flush({ timeoutMs: closeOptions.timeoutMs ?? 10_000 });
        } catch (err) {
          shutDown();
          throw err;
        }
        // With nothing left to send the stream ends its request side at once
        // (closing): let the call end cleanly rather than cancel it.
        const last = stream;
        if (last) {
          last.wake?.();
          await Promise.race([last.ended, new Promise((resolve) => setTimeout(resolve, 1000).unref())]);
        }
        shutDown();
      })();
      return closeResult;
    },

    stats: () => ({
      ...stats,
      buffered: { ...stats.buffered },
      sent: { ...stats.sent },
      acknowledged: { ...stats.acknowledged },
      retried: { ...stats.retried },
      dropped: { ...stats.dropped },
      refused: { ...stats.refused },
    }),
  };
}

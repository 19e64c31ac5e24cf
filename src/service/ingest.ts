import { create } from "@bufbuild/protobuf";
import { type IngestAck, IngestAckSchema, type IngestRequest } from "../../gen/reqlog/v1/log_service_pb.js";
import { prepareIngest } from "../write/prepare-batches.js";
import { preparedIngestOf } from "../write/prepared-requests.js";
import type { BidiStreamHandler, CallContext } from "./call-context.js";
import type { ServiceDeps } from "./service-deps.js";

/**
 * Batches in flight per stream: the next batch is read and validated while
 * one commits (they may share a transaction); beyond that the stream is not
 * read until a batch is acknowledged, so a client that sends faster than
 * batches commit is held back by the transport's flow control instead of
 * being buffered.
 */
const window = 2;

/**
 * Ingest: batches of records and lines on one long-lived stream. Each batch
 * is validated whole, committed (sharing the group commit with other
 * writers), then acknowledged, in order. A batch that is refused ends the
 * stream with its error; it stored nothing, and every batch acknowledged
 * before it is stored (a batch sent after it may have been stored
 * unacknowledged: sending it again is harmless, as records and lines are
 * stored idempotently).
 */
export function createIngestHandler({ store, limits, privacy }: ServiceDeps): BidiStreamHandler<IngestRequest, IngestAck> {
  async function commit(request: IngestRequest, call: CallContext): Promise<IngestAck> {
    const batch = preparedIngestOf(request) ?? prepareIngest(request, limits, privacy);
    if (batch.invalid) throw batch.invalid;
    call.authorize(batch.apps);
    const result = await store.ingest(batch.records, batch.lines, call.signal);
    return create(IngestAckSchema, { batchId: batch.batchId, records: result.records, lines: result.lines });
  }

  return async function* ingest(requests, call) {
    const batches = requests[Symbol.asyncIterator]();
    const inFlight: Promise<IngestAck>[] = [];
    // The next batch is read while earlier ones commit, so each ack goes out
    // as soon as its batch is stored (a client may wait for it before sending
    // more); nothing is read while `window` batches are in flight.
    let next: Promise<IteratorResult<IngestRequest>> | undefined;
    let ended = false;
    try {
      while (!ended || inFlight.length > 0) {
        if (!ended && inFlight.length < window) next ??= batches.next();
        const oldest = inFlight[0]?.then(
          () => undefined,
          () => undefined,
        );
        const arrived = await Promise.race([...(oldest ? [oldest] : []), ...(next ? [next] : [])]);
        if (arrived === undefined) {
          yield await inFlight.shift()!;
        } else {
          next = undefined;
          if (arrived.done) {
            ended = true;
          } else {
            const committed = commit(arrived.value, call);
            committed.catch(() => {}); // awaited in order above
            inFlight.push(committed);
          }
        }
      }
    } finally {
      // Batches still committing when the stream fails or is cancelled are
      // not acknowledged; they are stored or not as their commit goes.
      for (const committed of inFlight) committed.catch(() => {});
      void batches.return?.();
    }
  };
}

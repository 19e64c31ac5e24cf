import { create, isFieldSet } from "@bufbuild/protobuf";
import type { ServerDuplexStream } from "@grpc/grpc-js";
import type { Logger } from "pino";
import {
  type IngestAck,
  IngestAckSchema,
  type IngestRequest,
  RequestLinesSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import type { Principal } from "../auth/authorizer.js";
import type { Decoded } from "../grpc/service-definition.js";
import { failure } from "../grpc/status-metadata.js";
import { exceeded } from "../limits.js";
import type { RequestContext } from "../store/store.js";
import { checkIdentifier } from "../write/identifiers.js";
import { prepareRequestLog } from "../write/prepare-request-log.js";
import { missingRequiredFields, requiredFieldsError } from "../write/required-fields.js";
import { type AppLine, checkLines, fromUserAppLogLines } from "../write/validate-lines.js";
import type { ServiceDeps } from "./handler.js";

type IngestCall = ServerDuplexStream<Decoded<IngestRequest>, IngestAck>;

/**
 * Ingest: batches of records and lines on one long-lived stream. Each batch
 * is validated whole, committed (sharing the group commit with other
 * writers), then acknowledged, in order. At most `window` batches are in
 * flight: then the stream is paused, so a client that sends faster than
 * batches commit is held back by HTTP/2 flow control instead of being
 * buffered. A batch that is refused ends the stream with its error; it stored
 * nothing, and every batch acknowledged before it is stored (a batch sent
 * after it may have been stored unacknowledged: sending it again is harmless,
 * as records and lines are stored idempotently).
 */
const window = 2;

export function createIngestHandler({ store, limits, auth }: ServiceDeps, logger: Logger) {
  async function commit(batch: IngestRequest, principal: Principal): Promise<IngestAck> {
    if (batch.log.length > limits.maxRecordsPerWrite) {
      throw exceeded(limits, "maxRecordsPerWrite", batch.log.length, "number of records in an Ingest batch");
    }
    // Records are checked by prepareRequestLog, line entries here.
    const records = batch.log.map((log, i) => prepareRequestLog(log, limits, `log[${i}]`));
    const flushes = batch.lines.map((entry, i): { request: RequestContext; lines: AppLine[] } => {
      const where = `lines[${i}]`;
      const missing = missingRequiredFields(RequestLinesSchema, entry, undefined, `${where}.`);
      if (missing.length > 0) throw requiredFieldsError(missing);
      checkIdentifier(entry.appId, `${where}.app_id`);
      checkIdentifier(entry.moduleId, `${where}.module_id`);
      checkIdentifier(entry.versionId, `${where}.version_id`);
      checkIdentifier(entry.requestId, `${where}.request_id`);
      return {
        request: {
          appId: entry.appId,
          moduleId: entry.moduleId,
          moduleSet: isFieldSet(entry, RequestLinesSchema.field.moduleId),
          versionId: entry.versionId,
          requestId: entry.requestId,
        },
        lines: checkLines(fromUserAppLogLines(entry.line), limits, `${where}.line`),
      };
    });
    auth.authorize(principal, "write", new Set([...batch.log.map((l) => l.appId), ...batch.lines.map((l) => l.appId)]));
    const result = await store.ingest(records, flushes);
    return create(IngestAckSchema, { batchId: batch.batchId, records: result.records, lines: result.lines });
  }

  return (call: IngestCall): void => {
    let principal: Principal;
    try {
      principal = auth.authenticate(call.metadata);
    } catch (err) {
      call.emit("error", failure(err, "Ingest", logger));
      return;
    }
    let failed = false;
    let inFlight = 0;
    // Acknowledgements go out in batch order: each waits for the one before.
    let acked: Promise<void> = Promise.resolve();
    const fail = (err: unknown) => {
      if (failed) return;
      failed = true;
      call.emit("error", failure(err, "Ingest", logger));
    };
    call.on("data", (decoded: Decoded<IngestRequest>) => {
      if (failed) return;
      // Up to `window` batches are validated and queued for commit while
      // earlier ones commit (they may share a transaction); then the stream
      // is paused until one is acknowledged.
      if (++inFlight >= window) call.pause();
      const committed = decoded.ok ? commit(decoded.message, principal) : Promise.reject(decoded.error);
      committed.catch(() => {}); // settled through `acked` below
      acked = acked.then(() =>
        committed.then(
          (ack) => {
            if (failed) return;
            call.write(ack);
            if (inFlight-- === window) call.resume();
          },
          fail,
        ),
      );
    });
    call.on("end", () => {
      void acked.then(() => {
        if (!failed) call.end();
      });
    });
    call.on("error", () => {
      failed = true;
    });
  };
}

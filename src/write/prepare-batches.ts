import { isFieldSet } from "@bufbuild/protobuf";
import { type IngestRequest, RequestLinesSchema, type WriteRequest } from "../../gen/reqlog/v1/log_service_pb.js";
import type { PreparedRecord, RequestLines } from "../domain/records.js";
import { exceeded, type Limits } from "../limits.js";
import { ReqlogError } from "../reqlog-error.js";
import { checkIdentifier } from "./identifiers.js";
import { prepareRequestLog } from "./prepare-request-log.js";
import { layOutLaterRequestLogs } from "./request-log-layout.js";
import { missingRequiredFields, requiredFieldsError } from "./required-fields.js";
import type { Privacy } from "./privacy.js";
import { checkLines, fromUserAppLogLines } from "./validate-lines.js";
import { systemClock } from "../clock.js";
import { latestTime } from "./time-window.js";

/**
 * A Write's records, validated and derived, or why they were refused: over
 * the record limit (refused before the call is authorized, as a request
 * of the wrong size is), or invalid (after it: the caller learns about its
 * records only if it may write them).
 */
export interface PreparedWrite {
  apps: string[];
  records: PreparedRecord[];
  tooMany?: ReqlogError;
  invalid?: ReqlogError;
}

/** An Ingest batch's records and lines, validated; or the error that refuses the whole batch. */
export interface PreparedIngest {
  batchId: bigint;
  apps: string[];
  records: PreparedRecord[];
  lines: RequestLines[];
  invalid?: ReqlogError;
}

/** Validates a Write's records (prepare-request-log.ts), each before any is stored. */
export function prepareWrite(request: WriteRequest, limits: Limits, privacy: Privacy): PreparedWrite {
  const apps = [...new Set(request.log.map((log) => log.appId))];
  if (request.log.length > limits.maxRecordsPerWrite) {
    return { apps, records: [], tooMany: exceeded(limits, "maxRecordsPerWrite", request.log.length, "number of records in Write") };
  }
  layOutLaterRequestLogs(request.log);
  try {
    const latest = latestTime(limits, systemClock());
    return { apps, records: request.log.map((log, i) => prepareRequestLog(log, limits, `log[${i}]`, { privacy, latest })) };
  } catch (err) {
    return { apps, records: [], invalid: ReqlogError.from(err) };
  }
}

/** Validates an Ingest batch whole: its records (prepare-request-log.ts) and its line entries. */
export function prepareIngest(batch: IngestRequest, limits: Limits, privacy: Privacy): PreparedIngest {
  const apps = [...new Set([...batch.log.map((l) => l.appId), ...batch.lines.map((l) => l.appId)])];
  const refused = (invalid: ReqlogError): PreparedIngest => ({ batchId: batch.batchId, apps, records: [], lines: [], invalid });
  if (batch.log.length > limits.maxRecordsPerWrite) {
    return refused(exceeded(limits, "maxRecordsPerWrite", batch.log.length, "number of records in an Ingest batch"));
  }
  layOutLaterRequestLogs(batch.log);
  try {
    const latest = latestTime(limits, systemClock());
    const records = batch.log.map((log, i) => prepareRequestLog(log, limits, `log[${i}]`, { privacy, latest }));
    const lines = batch.lines.map((entry, i): RequestLines => {
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
        lines: checkLines(fromUserAppLogLines(entry.line), limits, privacy, `${where}.line`, latest),
      };
    });
    return { batchId: batch.batchId, apps, records, lines };
  } catch (err) {
    return refused(ReqlogError.from(err));
  }
}

import { create } from "@bufbuild/protobuf";
import {
  type ExportLogsServiceRequest,
  type ExportLogsServiceResponse,
  ExportLogsServiceResponseSchema,
} from "../../gen/opentelemetry/proto/collector/logs/v1/logs_service_pb.js";
import type { AppLine, PreparedRecord, RequestLines } from "../domain/records.js";
import { type OtlpMapping, type OtlpRejection, otlpLogRecords } from "../ingest/otlp-log-records.js";
import { exceeded } from "../limits.js";
import { ReqlogError } from "../reqlog-error.js";
import { checkIdentifier } from "../write/identifiers.js";
import { prepareRequestLog } from "../write/prepare-request-log.js";
import { systemClock } from "../clock.js";
import { latestTime } from "../write/time-window.js";
import { prepareLine } from "../write/validate-lines.js";
import type { UnaryHandler } from "./call-context.js";
import type { ServiceDeps } from "./service-deps.js";

/** Rejections named in partial_success.error_message, at most (the count says how many in all). */
const namedRejections = 10;

function partialSuccess(rejected: OtlpRejection[]): ExportLogsServiceResponse {
  if (rejected.length === 0) return create(ExportLogsServiceResponseSchema);
  const named = rejected.slice(0, namedRejections).map((r) => `${r.where}: ${r.problem}`);
  const more = rejected.length > namedRejections ? `; and ${rejected.length - namedRejections} more` : "";
  return create(ExportLogsServiceResponseSchema, {
    partialSuccess: {
      rejectedLogRecords: BigInt(rejected.length),
      errorMessage: `${rejected.length} log record${rejected.length === 1 ? "" : "s"} rejected: ${named.join("; ")}${more}`,
    },
  });
}

/** A ReqlogError's message; anything else is not a record's fault. */
function problemOf(err: unknown): string {
  if (err instanceof ReqlogError) return err.message;
  throw err;
}

/**
 * OTLP's LogsService.Export: OpenTelemetry log records become request
 * records and app lines (see otlpLogRecords), checked by the same write
 * path as Write and Ingest, stored in one transaction. A record that cannot
 * be stored is rejected alone and reported in partial_success (how many,
 * and where and why, the first ten by name); the call fails as a whole only
 * as Write would (a token without write access to an app it names, a limit
 * on the whole request, storage).
 */
export function createOtlpExportHandler(
  { store, limits, privacy }: ServiceDeps,
  mapping: OtlpMapping,
): UnaryHandler<ExportLogsServiceRequest, ExportLogsServiceResponse> {
  return async (request, call) => {
    const converted = otlpLogRecords(request, mapping, call.defaultApp);
    const rejected = [...converted.rejected];
    if (converted.records.length > limits.maxRecordsPerWrite) {
      throw exceeded(limits, "maxRecordsPerWrite", converted.records.length, "number of request records in an Export");
    }
    const records: PreparedRecord[] = [];
    const latest = latestTime(limits, systemClock());
    for (const { log, where } of converted.records) {
      try {
        records.push(prepareRequestLog(log, limits, where, { privacy, latest }));
      } catch (err) {
        rejected.push({ where, problem: problemOf(err) });
      }
    }
    const lines: RequestLines[] = [];
    for (const group of converted.lines) {
      const { request: target } = group;
      try {
        checkIdentifier(target.appId, "the app id");
        checkIdentifier(target.versionId, "the version id");
        checkIdentifier(target.moduleId, "the module id");
      } catch (err) {
        const problem = problemOf(err);
        for (const line of group.lines) rejected.push({ where: line.where, problem });
        continue;
      }
      const kept: AppLine[] = [];
      for (const line of group.lines) {
        try {
          kept.push(prepareLine(line, limits, privacy, "the log record's", kept.length, latest));
        } catch (err) {
          rejected.push({ where: line.where, problem: problemOf(err) });
        }
      }
      if (kept.length > limits.maxLinesPerFlush) {
        throw exceeded(limits, "maxLinesPerFlush", kept.length, `number of log records of one request (${Buffer.from(target.requestId).toString()}) in an Export`);
      }
      if (kept.length > 0) lines.push({ request: target, lines: kept });
    }
    call.authorize(new Set([...records.map((r) => r.log.appId), ...lines.map((l) => l.request.appId)]));
    if (records.length > 0 || lines.length > 0) await store.ingest(records, lines, call.signal);
    rejected.sort((a, b) => a.where.localeCompare(b.where, "en", { numeric: true }));
    return partialSuccess(rejected);
  };
}

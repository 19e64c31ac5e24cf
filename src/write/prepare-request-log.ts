import { isFieldSet } from "@bufbuild/protobuf";
import { type RequestLog, RequestLogSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { formatCombined } from "../format/combined-line.js";
import type { Limits } from "../limits.js";
import { ReqlogError } from "../reqlog-error.js";
import { checkIdentifier } from "./identifiers.js";
import { missingRequiredFields, requiredFieldsError } from "./required-fields.js";
import type { PreparedRecord } from "../domain/records.js";
import { defaultPrivacy, type Privacy } from "./privacy.js";
import { checkLines } from "./validate-lines.js";
import { systemClock } from "../clock.js";
import { checkNotFuture, checkNotNegative, latestTime } from "./time-window.js";

/** Required RequestLog fields that Write derives when the writer leaves them unset. */
const derivedFields: ReadonlySet<string> = new Set(
  ["ip", "end_time", "latency", "mcycles", "http_version", "status", "response_size", "url_map_entry", "combined"].map(
    (name) => `${RequestLogSchema.typeName}.${name}`,
  ),
);


/**
 * A combined line as the writer gave it (an access log's own line), redacted,
 * its leading client address (`ip` or `ip:port`) anonymised as the record's.
 */
function givenCombined(combined: string, givenIp: string, storedIp: string, privacy: Privacy): string {
  const redacted = privacy.redact.text(combined);
  if (storedIp === givenIp || givenIp === "") return redacted;
  for (const lead of [givenIp, `[${givenIp}]`]) {
    if (redacted.startsWith(lead) && /^($|[\s:\]])/.test(redacted.slice(lead.length))) {
      return (lead === givenIp ? storedIp : `[${storedIp}]`) + redacted.slice(lead.length);
    }
  }
  return redacted;
}

/**
 * Validates one RequestLog of a Write and derives what the writer left out
 * (unset, or 0 / "" where that is not a real value): end_time and latency
 * from each other (end_time 0 while in progress), the combined line from the
 * fields, "" and 0 for the other required fields (the proto defaults).
 * Credentials in the resource, the referrer, a given combined line and the
 * app lines are redacted, and the IP anonymised when asked (privacy.ts),
 * before anything is derived from them: the derived combined line, the
 * search index and every stored copy see only what is left; `privacy` is
 * the server's (the built-in redaction when not given: nothing stores a
 * record unredacted).
 * `where` names the record in errors (`log[3]`). Its times (and its lines')
 * must not lie past `latest` (time-window.ts); status, response_size and
 * latency must not be negative.
 */
export function prepareRequestLog(
  input: RequestLog,
  limits: Limits,
  where: string,
  { privacy = defaultPrivacy, latest = latestTime(limits, systemClock()) }: { privacy?: Privacy; latest?: bigint } = {},
): PreparedRecord {
  const missing = missingRequiredFields(RequestLogSchema, input, derivedFields);
  if (missing.length > 0) throw requiredFieldsError(missing.map((path) => `${where}.${path}`));
  checkIdentifier(input.appId, `${where}.app_id`);
  checkIdentifier(input.versionId, `${where}.version_id`);
  checkIdentifier(input.moduleId, `${where}.module_id`);
  checkIdentifier(input.requestId, `${where}.request_id`);
  if (input.startTime < 0n) {
    throw ReqlogError.invalid(`${where}.start_time is negative (${input.startTime})`);
  }

  checkNotFuture(input.startTime, `${where}.start_time`, limits, latest);
  checkNotNegative(input.status, `${where}.status`);
  checkNotNegative(input.responseSize, `${where}.response_size`);
  checkNotNegative(input.latency, `${where}.latency`);

  if (input.method === "") throw ReqlogError.invalid(`${where}.method is empty`);
  if (input.resource === "") throw ReqlogError.invalid(`${where}.resource is empty`);

  // The request message is ours: derive into it rather than copy it.
  const log = input;
  const incomingLines = input.line;
  log.line = [];
  // Strict proto2 clients (grpcurl, Python) cannot leave a required field
  // unset, so 0 / "" in a derivable field asks for the derived value too.
  const endGiven = isFieldSet(input, RequestLogSchema.field.endTime) && input.endTime !== 0n;
  const latencyGiven = isFieldSet(input, RequestLogSchema.field.latency) && input.latency !== 0n;
  if (!endGiven) {
    log.endTime = !log.finished ? 0n : latencyGiven ? log.startTime + log.latency : log.startTime;
  }
  if (log.endTime !== 0n && log.endTime < log.startTime) {
    throw ReqlogError.invalid(
      `${where}.end_time (${log.endTime}) is before ${where}.start_time (${log.startTime})`,
    );
  }
  checkNotFuture(log.endTime, endGiven ? `${where}.end_time` : `${where}.end_time (start_time + latency)`, limits, latest);
  if (!latencyGiven) log.latency = log.endTime === 0n ? 0n : log.endTime - log.startTime;
  log.resource = privacy.redact.url(input.resource);
  if (input.referrer !== "") log.referrer = privacy.redact.url(input.referrer);
  // Setting the remaining required fields to their (proto default) values
  // marks them present, so that every reply carries them.
  const givenIp = input.ip;
  log.ip = privacy.ip(givenIp);
  log.mcycles = input.mcycles;
  log.httpVersion = input.httpVersion;
  log.status = input.status;
  log.responseSize = input.responseSize;
  log.urlMapEntry = input.urlMapEntry;
  const derivedCombined = formatCombined(log);
  log.combined = input.combined !== "" ? givenCombined(input.combined, givenIp, log.ip, privacy) : derivedCombined;

  const lines = checkLines(
    incomingLines.map((l) => ({ time: l.time, level: l.level, message: l.logMessage })),
    limits,
    privacy,
    `${where}.line`,
    latest,
  );
  return {
    log,
    lines,
    storedCombined: log.combined === derivedCombined ? undefined : log.combined,
  };
}

import type { UserAppLogLine } from "../../gen/reqlog/v1/log_service_pb.js";
import { exceeded, type Limits } from "../limits.js";
import type { AppLine } from "../domain/records.js";
import { ReqlogError } from "../reqlog-error.js";
import type { Privacy } from "./privacy.js";
import { systemClock } from "../clock.js";
import { checkNotFuture, latestTime } from "./time-window.js";


/** An app log line as it arrives: UserAppLogLine's level is an int64. */
export interface IncomingLine {
  time: bigint;
  level: number | bigint;
  message: string;
}

/** UserAppLogLines (Flush, Ingest) as incoming lines. */
export function fromUserAppLogLines(lines: readonly UserAppLogLine[]): IncomingLine[] {
  return lines.map((l) => ({ time: l.timestampUsec, level: l.level, message: l.message }));
}

/** Checks one app log line's level, time (not past `latest`, time-window.ts) and size; `where` names it in errors. */
export function checkLine(line: IncomingLine, limits: Limits, where: string, latest: bigint): void {
  if (line.level < 0 || line.level > 4) {
    throw ReqlogError.invalid(`${where}.level is ${line.level}: levels are 0 (DEBUG) to 4 (CRITICAL)`);
  }
  if (line.time < 0n) {
    throw ReqlogError.invalid(`${where} has a negative time ${line.time}`);
  }
  checkNotFuture(line.time, `${where}.time`, limits, latest);
  const bytes = Buffer.byteLength(line.message, "utf8");
  if (bytes > limits.maxLineBytes) {
    throw exceeded(limits, "maxLineBytes", bytes, `${where} message size in bytes`);
  }
}

/**
 * Checks one line (checkLine) and returns it as stored, at position `pos`
 * of its flush: its message redacted (privacy.ts). Every path that stores
 * app lines (Flush, Write, Ingest, OTLP) takes them through here.
 */
export function prepareLine(
  line: IncomingLine,
  limits: Limits,
  privacy: Privacy,
  where: string,
  pos: number,
  latest: bigint,
): AppLine {
  checkLine(line, limits, where, latest);
  return { time: line.time, level: Number(line.level), message: privacy.redact.text(line.message), pos };
}

/** Checks the count of a batch of lines and each line; returns them with positions, redacted. */
export function checkLines(
  lines: readonly IncomingLine[],
  limits: Limits,
  privacy: Privacy,
  where: string,
  latest: bigint = latestTime(limits, systemClock()),
): AppLine[] {
  if (lines.length > limits.maxLinesPerFlush) {
    throw exceeded(limits, "maxLinesPerFlush", lines.length, `number of lines in ${where}`);
  }
  return lines.map((line, pos) => prepareLine(line, limits, privacy, `${where}[${pos}]`, pos, latest));
}

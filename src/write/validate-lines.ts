import type { UserAppLogLine } from "../../gen/reqlog/v1/log_service_pb.js";
import { exceeded, type Limits } from "../limits.js";
import type { AppLine } from "../domain/records.js";
import { ReqlogError } from "../reqlog-error.js";
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

/** Checks the count of a batch of lines and each line; returns them with positions. */
export function checkLines(
  lines: readonly IncomingLine[],
  limits: Limits,
  where: string,
  latest: bigint = latestTime(limits, systemClock()),
): AppLine[] {
  if (lines.length > limits.maxLinesPerFlush) {
    throw exceeded(limits, "maxLinesPerFlush", lines.length, `number of lines in ${where}`);
  }
  return lines.map((line, pos) => {
    checkLine(line, limits, `${where}[${pos}]`, latest);
    return { time: line.time, level: Number(line.level), message: line.message, pos };
  });
}

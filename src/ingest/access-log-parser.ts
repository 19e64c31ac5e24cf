import type { RequestLog } from "../../gen/reqlog/v1/log_service_pb.js";
import { ReqlogError } from "../reqlog-error.js";
import { accessLogRecord, type RecordTarget, timeVariables } from "./access-log-record.js";
import { compileLogFormat, type FormatName, type LogFormat, namedFormats } from "./log-format.js";

/** Which format lines are read in: a named one, or an nginx `log_format` of the user's. */
export interface FormatChoice {
  /** A named format; "auto" (the default) tries combined, then common, line by line. */
  format?: FormatName;
  /** An nginx log_format (text, or the directive as nginx.conf has it); wins over `format`. */
  logFormat?: string;
}

/** A line's outcome: its record, or why it has none. */
export type ParsedLine = { log: RequestLog } | { problem: string };

export interface AccessLogParser {
  /** What the parser reads, for messages ("combined or common", or the custom format). */
  readonly description: string;
  /**
   * The record of one line (without its line break). `fallbackId` gives the
   * request id of a line that carries no $request_id of its own.
   */
  parse(line: string, fallbackId: () => string): ParsedLine;
}

function checkUsable(format: LogFormat): void {
  const has = (name: string) => format.variables.includes(name);
  if (!timeVariables.some(has)) {
    throw new Error(`log format ${JSON.stringify(format.source)} has no time: it needs $time_local, $time_iso8601 or $msec`);
  }
  if (!has("request") && !(has("request_method") && (has("request_uri") || has("uri")))) {
    throw new Error(`log format ${JSON.stringify(format.source)} has no request: it needs $request, or $request_method and $request_uri`);
  }
}

/** The formats a choice reads, in the order they are tried. */
function formatsOf(choice: FormatChoice): LogFormat[] {
  if (choice.logFormat !== undefined) return [compileLogFormat(choice.logFormat)];
  const name = choice.format ?? "auto";
  if (name === "auto") return [compileLogFormat(namedFormats.combined), compileLogFormat(namedFormats.common)];
  if (!(name in namedFormats)) throw new Error(`unknown format "${name}": auto, ${Object.keys(namedFormats).join(", ")}, or give --log-format`);
  return [compileLogFormat(namedFormats[name])];
}

/**
 * Access-log lines into request records for `target`. With several formats
 * (auto), each line is tried first in the format the previous line had.
 */
export function createAccessLogParser(choice: FormatChoice, target: RecordTarget): AccessLogParser {
  const formats = formatsOf(choice);
  for (const format of formats) checkUsable(format);
  const description =
    choice.logFormat !== undefined ? `the log format ${JSON.stringify(formats[0]!.source)}` : formats.length > 1 ? "the combined or common format" : `the ${choice.format} format`;
  let last = 0;
  return {
    description,
    parse(raw, fallbackId) {
      const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
      for (let k = 0; k < formats.length; k++) {
        const i = (last + k) % formats.length;
        const values = formats[i]!.match(line);
        if (!values) continue;
        last = i;
        try {
          return { log: accessLogRecord(values, line, fallbackId, target) };
        } catch (err) {
          if (err instanceof ReqlogError) return { problem: err.message };
          throw err;
        }
      }
      return { problem: `not in ${description}: ${formats[0]!.explain(line)}` };
    },
  };
}

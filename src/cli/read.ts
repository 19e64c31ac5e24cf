import { clone, create, toJsonString } from "@bufbuild/protobuf";
import {
  LogModuleVersionSchema,
  LogOffsetSchema,
  LogReadRequestSchema,
  type RequestLog,
  RequestLogSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { parseDuration } from "../config.js";
import { maxCount } from "../query/read-plan.js";
import { levelNames } from "../domain/levels.js";
import { callFailure, type ClientOptions, createLogServiceClient, type LogServiceClient } from "../client/log-service-client.js";

export type OutputFormat = "combined" | "json" | "table";

export interface ReadOptions extends ClientOptions {
  app: string;
  module?: string;
  version: string[];
  since?: string;
  until?: string;
  severity?: string;
  includeIncomplete: boolean;
  regex?: string;
  hostRegex?: string;
  requestId: string[];
  limit: number;
  output: OutputFormat;
  appLogs: boolean;
  follow: boolean;
}

/** A time flag: a duration back from now (90s, 15m, 2h, 7d) or a date/time (2026-11-21T10:00:00Z), in µs. */
export function parseTime(text: string, what: string, nowMs = Date.now()): bigint {
  if (/^\d+(\.\d+)?\s*(ms|s|m|h|d|w)$/i.test(text.trim())) {
    return BigInt(Math.round((nowMs - parseDuration(text, what)) * 1000));
  }
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) {
    throw new Error(`${what}: "${text}" is neither a duration (15m, 2h, 7d) nor a date/time (2026-11-21T10:00:00Z)`);
  }
  return BigInt(ms) * 1000n;
}

/** A severity flag: a level name (debug … critical, case-insensitive) or 0..4. */
export function parseSeverity(text: string): number {
  const byName = levelNames.indexOf(text.toUpperCase() as (typeof levelNames)[number]);
  if (byName >= 0) return byName;
  if (/^[0-4]$/.test(text)) return Number(text);
  throw new Error(`--severity: "${text}" is not one of ${levelNames.join(", ").toLowerCase()} or 0-4`);
}

function isoTime(usec: bigint): string {
  return new Date(Number(usec / 1000n)).toISOString();
}

/** One request as the chosen output prints it (app lines indented under a combined line). */
export function formatRequest(log: RequestLog, output: OutputFormat): string {
  switch (output) {
    case "json":
      return toJsonString(RequestLogSchema, log);
    case "table": {
      const time = isoTime(log.endTime > 0n ? log.endTime : log.startTime);
      const state = log.finished ? String(log.status) : "...";
      // A finished request with no latency is one whose writer did not know it (an access log without $request_time).
      const latency = log.finished && log.latency === 0n ? "-" : `${log.latency / 1000n}ms`;
      return [time, state.padEnd(6), log.method.padEnd(6), latency.padStart(7), `${log.moduleId}:${log.versionId}`, log.resource].join("  ");
    }
    default: {
      const lines = log.line.map((l) => `\t${isoTime(l.time)} ${levelNames[l.level] ?? l.level} ${l.logMessage}`);
      return [log.combined, ...lines].join("\n");
    }
  }
}

/** The header line of `--output table`, over the columns formatRequest prints. */
export const tableHeader = ["time (UTC)".padEnd(24), "status", "method", "latency", "module:version", "resource"].join("  ");

/** The newest request stored for the app, whatever the filters: what an empty answer is told against. */
async function newestOf(client: LogServiceClient, app: string): Promise<RequestLog | undefined> {
  const page = await client.read(create(LogReadRequestSchema, { appId: app, count: 1n, includeIncomplete: true }));
  return page.log[0];
}

function readRequest(options: ReadOptions, nowMs: number) {
  const moduleVersion =
    options.module !== undefined || options.version.length > 0
      ? (options.version.length > 0 ? options.version : [undefined]).map((versionId) =>
          create(LogModuleVersionSchema, {
            moduleId: options.module ?? "default",
            ...(versionId !== undefined ? { versionId } : {}),
          }),
        )
      : [];
  return create(LogReadRequestSchema, {
    appId: options.app,
    moduleVersion,
    ...(options.since ? { startTime: parseTime(options.since, "--since", nowMs) } : {}),
    ...(options.until ? { endTime: parseTime(options.until, "--until", nowMs) } : {}),
    ...(options.severity !== undefined ? { minimumLogLevel: parseSeverity(options.severity) } : {}),
    includeIncomplete: options.includeIncomplete,
    ...(options.regex !== undefined ? { combinedLogRegex: options.regex } : {}),
    ...(options.hostRegex !== undefined ? { hostRegex: options.hostRegex } : {}),
    requestId: options.requestId.map((id) => new TextEncoder().encode(id)),
    includeAppLogs: options.appLogs && options.output !== "table",
  });
}

/**
 * `reqlog read`: the newest --limit matching requests, paging through offsets
 * as needed, printed oldest first (like tail); with --follow it then prints
 * new matching requests as they are committed, until interrupted.
 */
export async function readCommand(
  options: ReadOptions,
  print: (text: string) => void = (t) => process.stdout.write(`${t}\n`),
  note: (text: string) => void = (t) => process.stderr.write(`${t}\n`),
): Promise<void> {
  const client = createLogServiceClient(options);
  try {
    const base = readRequest(options, Date.now());
    const found: RequestLog[] = [];
    let offset: Uint8Array | undefined;
    do {
      const request = clone(LogReadRequestSchema, base);
      if (options.requestId.length === 0) request.count = BigInt(Math.min(maxCount, options.limit - found.length));
      if (offset) request.offset = create(LogOffsetSchema, { requestId: offset });
      const page = await client.read(request);
      found.push(...page.log);
      offset = page.offset?.requestId;
    } while (offset && found.length < options.limit);
    if (found.length === 0) {
      // Silence would look the same for a misspelt app and for filters that match nothing: say which it is.
      const newest = await newestOf(client, options.app);
      note(
        newest === undefined
          ? `no requests are stored for app "${options.app}"${options.follow ? " yet; following" : ": check --app (the app_id your servers write)"}`
          : `no requests of app "${options.app}" match; its newest is from ${isoTime(newest.endTime > 0n ? newest.endTime : newest.startTime)}`,
      );
    }
    if (options.output === "table" && (found.length > 0 || options.follow)) print(tableHeader);
    for (const log of found.reverse()) print(formatRequest(log, options.output));

    if (options.follow) {
      const tail = clone(LogReadRequestSchema, base);
      tail.requestId = [];
      const interrupted = new AbortController();
      const stop = () => interrupted.abort();
      process.once("SIGINT", stop);
      try {
        for await (const page of client.tail(tail, { signal: interrupted.signal })) {
          for (const log of page.log) print(formatRequest(log, options.output));
        }
      } catch (err) {
        if (!interrupted.signal.aborted) throw err;
      } finally {
        process.off("SIGINT", stop);
      }
    }
  } catch (err) {
    throw new Error(callFailure(err));
  } finally {
    client.close();
  }
}

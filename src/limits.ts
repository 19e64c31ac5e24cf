import { ReqlogError } from "./reqlog-error.js";

interface LimitSpec {
  default: number;
  /** The gRPC code of a request over the limit. */
  code: "RESOURCE_EXHAUSTED" | "INVALID_ARGUMENT";
  description: string;
}

/**
 * Every limit of the service: a name, a default, and one message template
 * (see `exceeded`). The CLI flag and environment variable are derived from
 * the name (maxLineBytes → --max-line-bytes, REQLOG_MAX_LINE_BYTES).
 */
export const limitSpecs = {
  maxMessageBytes: {
    default: 16 * 1024 * 1024,
    code: "RESOURCE_EXHAUSTED",
    description: "largest request message, in bytes",
  },
  maxRecordsPerWrite: {
    default: 1000,
    code: "INVALID_ARGUMENT",
    description: "request records in one Write",
  },
  maxLinesPerFlush: {
    default: 10_000,
    code: "INVALID_ARGUMENT",
    description: "app log lines in one Flush, or attached to one record in a Write",
  },
  maxLineBytes: {
    default: 64 * 1024,
    code: "RESOURCE_EXHAUSTED",
    description: "bytes of one app log line's message",
  },
  maxRequestLines: {
    default: 100_000,
    code: "RESOURCE_EXHAUSTED",
    description: "app log lines one request may hold (a write that would take it past is refused whole)",
  },
  maxRequestLineBytes: {
    default: 8 * 1024 * 1024,
    code: "RESOURCE_EXHAUSTED",
    description: "bytes of app log lines one request may hold (a write that would take it past is refused whole)",
  },
  maxFutureSeconds: {
    default: 24 * 60 * 60,
    code: "INVALID_ARGUMENT",
    description: "seconds a written start or end time, or an app line's time, may lie ahead of the server's clock",
  },
  maxStatusBytes: {
    default: 4096,
    code: "INVALID_ARGUMENT",
    description: "bytes of one SetStatus text",
  },
  maxRegexBytes: {
    default: 1024,
    code: "INVALID_ARGUMENT",
    description: "bytes of a Read's combined_log_regex or host_regex",
  },
  maxRegexCost: {
    default: 10_000,
    code: "INVALID_ARGUMENT",
    description:
      "compile cost of a Read's or Stats' pattern: each character 1, a class 4, a Unicode class (\\pL) 1000, repetitions counted out",
  },
  readScanRows: {
    default: 200_000,
    code: "INVALID_ARGUMENT",
    description: "records one Read may examine before it returns what it found, with an offset to continue",
  },
  readScanMs: {
    default: 200,
    code: "INVALID_ARGUMENT",
    description: "milliseconds one Read may scan before it returns what it found, with an offset to continue",
  },
  maxReadBytes: {
    default: 16 * 1024 * 1024,
    code: "RESOURCE_EXHAUSTED",
    description:
      "bytes of the records (and app lines) of one Read page or Tail message: a page ends early, with an offset to continue",
  },
  maxUsageRecords: {
    default: 100_000,
    code: "RESOURCE_EXHAUSTED",
    description: "records one Usage call may return (time buckets × versions)",
  },
  maxStatsRecords: {
    default: 100_000,
    code: "RESOURCE_EXHAUSTED",
    description: "records one Stats call may return (time buckets × routes × status classes × versions)",
  },
  maxQueryBytes: {
    default: 16 * 1024,
    code: "INVALID_ARGUMENT",
    description: "bytes of a Query's text",
  },
  maxQueryRows: {
    default: 10_000,
    code: "RESOURCE_EXHAUSTED",
    description: "rows one Query returns (more are cut, and the answer says so: add | limit N)",
  },
  maxQueryGroups: {
    default: 100_000,
    code: "RESOURCE_EXHAUSTED",
    description: "groups a Query's stats or top pipe may hold",
  },
  maxTails: {
    default: 64,
    code: "RESOURCE_EXHAUSTED",
    description: "Tail calls open at once",
  },
  maxTailsPerToken: {
    default: 16,
    code: "RESOURCE_EXHAUSTED",
    description: "Tail calls one access token may hold open at once (within max-tails)",
  },
  rateLimit: {
    default: 1000,
    code: "RESOURCE_EXHAUSTED",
    description: "calls per second one access token may make (bursts of one second's worth)",
  },
} as const satisfies Record<string, LimitSpec>;

export type LimitName = keyof typeof limitSpecs;
export type Limits = Record<LimitName, number>;

export const limitNames = Object.keys(limitSpecs) as LimitName[];

export const defaultLimits: Readonly<Limits> = Object.fromEntries(
  limitNames.map((name) => [name, limitSpecs[name].default]),
) as Limits;

/** The flag spelling of a limit: maxLineBytes → max-line-bytes. */
export function limitFlag(name: LimitName): string {
  return name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/** The environment variable of a limit: maxLineBytes → REQLOG_MAX_LINE_BYTES. */
export function limitEnv(name: LimitName): string {
  return `REQLOG_${limitFlag(name).replace(/-/g, "_").toUpperCase()}`;
}

/** The one message template of every limit (`actual` may be a bound, e.g. "more than 100000"). */
export function exceeded<N extends LimitName>(
  limits: Pick<Limits, N>,
  name: N,
  actual: number | string,
  what: string,
  hint?: string,
): ReqlogError {
  const message = `${what} is ${actual}, over the limit ${limitFlag(name)}=${limits[name]}${hint ? `: ${hint}` : ""}`;
  return limitSpecs[name].code === "RESOURCE_EXHAUSTED" ? ReqlogError.exhausted(message) : ReqlogError.invalid(message);
}

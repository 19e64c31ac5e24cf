import { isFieldSet } from "@bufbuild/protobuf";
import { LogModuleVersionSchema, type StatsRequest, StatsRequestSchema, StatsSplit } from "../../gen/reqlog/v1/log_service_pb.js";
import { exceeded, type Limits } from "../limits.js";
import { ReqlogError } from "../reqlog-error.js";
import { checkIdentifier } from "../write/identifiers.js";
import { checkRegex } from "./read-plan.js";

/**
 * A validated Stats request, in whole hours since the epoch. Plain data (the
 * bot pattern as its source text), so any backend executes it.
 */
export interface StatsPlan {
  appId: string;
  /** (module, version) pairs, ORed; a pair without a version: all of the module's; undefined = all. */
  versions?: { moduleId: string; versionId?: string }[];
  /** First hour (inclusive); undefined = the first with stats. */
  startHour?: number;
  /** Last hour (exclusive); undefined = after the last with stats. */
  endHour?: number;
  /** Hours per bucket; 0 = one bucket for the whole range. */
  resolutionHours: number;
  /** A record per (module, version), rather than versions merged. */
  perVersion: boolean;
  /** Records wanted (otherwise only the buckets, the route figures and the top lists). */
  records: boolean;
  /** A record per route, rather than routes merged. */
  byRoute: boolean;
  /** Status classes to count (0 to 5); undefined = all. */
  statusClasses?: number[];
  /** RE2 pattern (valid, within the length limit): requests whose user agent contains a match are left out. */
  excludeUserAgents?: string;
  /** Length of the client IP and user agent lists (0: none). */
  topN: number;
  /**
   * Most records (time buckets × routes × status classes × versions) the
   * answer may hold: a store that finds more refuses the call with `statsTooLarge`.
   */
  maxRecords: number;
}

/** The longest top list a call may ask for. */
const maxTopN = 1000;
/** The end of the year 9999, in seconds: ranges end there at the latest. */
const lastSecond = 253_402_300_800n;

/** Seconds → hours, rounded down or up. */
function hourOf(seconds: bigint, round: "down" | "up"): number {
  const clamped = seconds > lastSecond ? lastSecond : seconds;
  return Number(round === "down" ? clamped / 3600n : (clamped + 3599n) / 3600n);
}

/**
 * Validates a StatsRequest: start rounds down and end up to the hour (as
 * Usage's do), status classes are 0 to 5, the bot pattern compiles as RE2.
 */
export function planStats(request: StatsRequest, limits: Limits): StatsPlan {
  const f = StatsRequestSchema.field;
  if (!isFieldSet(request, f.appId)) throw ReqlogError.invalid("required field not set: app_id");
  checkIdentifier(request.appId, "app_id");
  const start = isFieldSet(request, f.startTime) ? request.startTime : undefined;
  const end = isFieldSet(request, f.endTime) ? request.endTime : undefined;
  for (const [name, value] of [["start_time", start], ["end_time", end]] as const) {
    if (value !== undefined && value < 0n) throw ReqlogError.invalid(`${name} is negative (${value})`);
  }
  if (start !== undefined && end !== undefined && start > end) {
    throw ReqlogError.invalid(`start_time (${start}) is after end_time (${end})`);
  }
  const bad = request.statusClass.find((c) => c < 0 || c > 5);
  if (bad !== undefined) {
    throw ReqlogError.invalid(`status_class ${bad} is not a class: 1 to 5 for 1xx to 5xx, 0 for other statuses`);
  }
  if (request.topN > maxTopN) throw ReqlogError.invalid(`top_n is ${request.topN}: at most ${maxTopN}`);
  if (StatsSplit[request.split] === undefined) throw ReqlogError.invalid(`split ${request.split} is not a StatsSplit`);
  const startHour = start === undefined ? undefined : hourOf(start, "down");
  const endHour = end === undefined ? undefined : hourOf(end, "up");
  // Every bucket may hold a record: refused before anything is read.
  if (startHour !== undefined && endHour !== undefined) checkStatsBuckets(startHour, endHour, request.resolutionHours, limits.maxStatsRecords);
  return {
    appId: request.appId,
    versions:
      request.moduleVersion.length > 0
        ? request.moduleVersion.map((mv) => ({
            moduleId: mv.moduleId,
            versionId: isFieldSet(mv, LogModuleVersionSchema.field.versionId) ? mv.versionId : undefined,
          }))
        : undefined,
    startHour,
    endHour,
    resolutionHours: request.resolutionHours,
    perVersion: request.perVersion,
    records: request.split !== StatsSplit.NONE,
    byRoute: request.split === StatsSplit.UNSPECIFIED || request.split === StatsSplit.ROUTE_CLASS,
    statusClasses: request.statusClass.length > 0 ? [...new Set(request.statusClass)].sort((a, b) => a - b) : undefined,
    excludeUserAgents: isFieldSet(request, f.excludeUserAgentRegex)
      ? checkRegex(request.excludeUserAgentRegex, "exclude_user_agent_regex", limits)
      : undefined,
    topN: request.topN,
    maxRecords: limits.maxStatsRecords,
  };
}

/**
 * Refuses a range cut into more time buckets than max-stats-records, each of
 * which may hold a record. A store checks it again once an open range is
 * known (from the first to the last hour with stats), before it walks or
 * allocates anything per bucket: a request stored with a far-future end time
 * must not make an open-ended Stats step through every hour up to it.
 */
export function checkStatsBuckets(startHour: number, endHour: number, resolutionHours: number, maxRecords: number): void {
  if (resolutionHours <= 0 || endHour <= startHour) return;
  const buckets = Math.ceil((endHour - startHour) / resolutionHours);
  if (buckets > maxRecords) throw statsTooLarge(maxRecords, buckets);
}

/** The refusal of a Stats call whose answer would hold more than max-stats-records records. */
export function statsTooLarge(maxStatsRecords: number, records: number | string): ReqlogError {
  return exceeded(
    { maxStatsRecords },
    "maxStatsRecords",
    records,
    "number of Stats records (time buckets × routes × status classes × versions)",
    "narrow the range or the filters, or raise resolution_hours",
  );
}

import { isFieldSet } from "@bufbuild/protobuf";
import { type LogUsageRequest, LogUsageRequestSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { exceeded, type Limits } from "../limits.js";
import { ReqlogError } from "../reqlog-error.js";
import { checkIdentifier } from "../write/identifiers.js";

/** A validated Usage request, in whole hours since the epoch. */
export interface UsagePlan {
  appId: string;
  /** Version ids to count; undefined = all. */
  versions?: string[];
  /** First hour (inclusive); undefined = the first stored. */
  startHour?: number;
  /** Last hour (exclusive); undefined = after the last stored. */
  endHour?: number;
  /** Hours per bucket; 0 = one bucket for the whole range. */
  resolutionHours: number;
  combineVersions: boolean;
  versionsOnly: boolean;
  /**
   * Most records (time buckets × versions) the answer may hold: a store that
   * finds more stops and refuses the call with `usageTooLarge`.
   */
  maxRecords: number;
}

/**
 * The last whole hour an int32 of seconds can hold (2038-01-19T03:00:00Z):
 * LogUsageRecord's times are int32, so ranges end there at the latest.
 */
export const lastHour = Math.floor((2 ** 31 - 1) / 3600);

/**
 * Validates a LogUsageRequest: start rounds down and end up to the hour,
 * start must not be after end, usage_version is unset or 1.
 */
export function planUsage(request: LogUsageRequest, limits: Limits): UsagePlan {
  const f = LogUsageRequestSchema.field;
  if (!isFieldSet(request, f.appId)) throw ReqlogError.invalid("required field not set: app_id");
  checkIdentifier(request.appId, "app_id");
  if (isFieldSet(request, f.usageVersion) && request.usageVersion !== 1) {
    throw ReqlogError.invalid(`usage_version is ${request.usageVersion}: only 1 is known (or leave it unset)`);
  }
  const hasStart = isFieldSet(request, f.startTime);
  const hasEnd = isFieldSet(request, f.endTime);
  if (hasStart && request.startTime < 0) throw ReqlogError.invalid(`start_time is negative (${request.startTime})`);
  if (hasEnd && request.endTime < 0) throw ReqlogError.invalid(`end_time is negative (${request.endTime})`);
  if (hasStart && hasEnd && request.startTime > request.endTime) {
    throw ReqlogError.invalid(`start_time (${request.startTime}) is after end_time (${request.endTime})`);
  }
  const startHour = hasStart ? Math.floor(request.startTime / 3600) : undefined;
  const endHour = hasEnd ? Math.min(Math.ceil(request.endTime / 3600), lastHour) : undefined;
  const resolutionHours = request.resolutionHours;
  if (startHour !== undefined && endHour !== undefined && resolutionHours > 0) {
    // Every time bucket may hold a record: refused before anything is read.
    const buckets = Math.ceil((endHour - startHour) / resolutionHours);
    if (buckets > limits.maxUsageRecords) throw usageTooLarge(limits.maxUsageRecords, buckets);
  }
  return {
    appId: request.appId,
    versions: request.versionId.length > 0 ? request.versionId : undefined,
    startHour,
    endHour,
    resolutionHours,
    combineVersions: request.combineVersions,
    versionsOnly: request.versionsOnly,
    maxRecords: limits.maxUsageRecords,
  };
}

/** The refusal of a Usage whose answer would hold more than max-usage-records records. */
export function usageTooLarge(maxUsageRecords: number, records: number | string): ReqlogError {
  return exceeded(
    { maxUsageRecords },
    "maxUsageRecords",
    records,
    "number of Usage records (time buckets × versions)",
    "narrow the range, raise resolution_hours or combine versions",
  );
}

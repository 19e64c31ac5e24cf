import { isFieldSet } from "@bufbuild/protobuf";
import { LogModuleVersionSchema, type LogReadRequest, LogReadRequestSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { exceeded, type Limits } from "../limits.js";
import { ReqlogError } from "../reqlog-error.js";
import { checkIdentifier } from "../write/identifiers.js";
import type { Cursor } from "../domain/positions.js";
import type { OffsetCodec } from "./offset-codec.js";
import { compileRegex } from "./regex-cache.js";
import { regexCost } from "./regex-cost.js";

export { compileRegex, re2Flags } from "./regex-cache.js";

/** Which extra fields a returned `combined` line carries (include_host / include_all). */
export type CombinedExtras = "none" | "host" | "all";

/**
 * A validated, clamped Read: what the store executes. It is plain data
 * (patterns as their source text, the cursor as the backend's bytes), so it
 * crosses to worker threads and other processes as it is; each backend
 * compiles what it needs.
 */
export interface ReadPlan {
  appId: string;
  /** (module, version) pairs, ORed; a pair without a version means all of the module's; undefined = all. */
  versions?: { moduleId: string; versionId?: string }[];
  /** Request-id mode: exactly these, in this order, once each. */
  requestIds?: Uint8Array[];
  /** Inclusive lower bound on sort time (µs). */
  startTime?: bigint;
  /** Exclusive upper bound on sort time (µs). */
  endTime?: bigint;
  /** Continue after this position (the backend's bytes, from a verified offset). */
  after?: Cursor;
  includeIncomplete: boolean;
  minimumLogLevel?: number;
  /** RE2 pattern (valid, within the length limit), partial match on the combined line. */
  combinedRegex?: string;
  /** RE2 pattern (valid, within the length limit), partial match on the host. */
  hostRegex?: string;
  replicaIndex?: number;
  count: number;
  /** undefined: no app lines; else the last `perRequest` lines (all when undefined). */
  appLogs?: { perRequest?: number };
  combinedExtras: CombinedExtras;
  /**
   * How many rows a scan examines, and how long it runs, before it returns
   * what it found (the row that crosses the row budget is still checked:
   * `rows + 1` at most); and how many bytes of records (with their app
   * lines when asked for) a page holds before it ends early (page-bytes.ts).
   */
  budget: { rows: number; ms: number; bytes: number };
}

export const defaultCount = 20;
export const maxCount = 1000;

/**
 * Checks that a pattern is within the length and cost limits (regex-cost.ts:
 * refused before RE2 compiles it on the calling thread) and compiles as RE2;
 * returns it.
 */
export function checkRegex(pattern: string, field: string, limits: Limits): string {
  const bytes = Buffer.byteLength(pattern, "utf8");
  if (bytes > limits.maxRegexBytes) throw exceeded(limits, "maxRegexBytes", bytes, `${field} length in bytes`);
  const cost = regexCost(pattern);
  if (cost > limits.maxRegexCost) {
    throw exceeded(
      limits,
      "maxRegexCost",
      cost,
      `${field}'s compile cost`,
      "each character counts 1, a class 4, a Unicode class such as \\pL 1000, and repetitions are counted out (x{100} is 100 x's)",
    );
  }
  try {
    compileRegex(pattern);
  } catch (err) {
    throw ReqlogError.invalid(`${field} is not a valid RE2 pattern: ${err instanceof Error ? err.message : err}`);
  }
  return pattern;
}

/**
 * Validates a LogReadRequest and turns it into a plan. Every error names
 * the field; nothing unchecked reaches the store.
 */
export function planRead(request: LogReadRequest, limits: Limits, offsets: OffsetCodec): ReadPlan {
  const f = LogReadRequestSchema.field;
  const has = (field: (typeof f)[keyof typeof f]) => isFieldSet(request, field);
  if (!has(f.appId)) throw ReqlogError.invalid("required field not set: app_id");
  checkIdentifier(request.appId, "app_id");

  if (request.versionId.length > 0 && request.moduleVersion.length > 0) {
    throw ReqlogError.invalid("give version_id or module_version, not both (version_id is the deprecated form)");
  }
  const versions =
    request.moduleVersion.length > 0
      ? request.moduleVersion.map((mv) => ({
          moduleId: mv.moduleId,
          versionId: isFieldSet(mv, LogModuleVersionSchema.field.versionId) ? mv.versionId : undefined,
        }))
      : request.versionId.length > 0
        ? request.versionId.map((versionId) => ({ moduleId: "default", versionId }))
        : undefined;

  const count = has(f.count) ? request.count : BigInt(defaultCount);
  if (count < 1n || count > BigInt(maxCount)) {
    throw ReqlogError.invalid(`count is ${count}: it must be 1 to ${maxCount} (default ${defaultCount})`);
  }
  if (has(f.minimumLogLevel) && (request.minimumLogLevel < 0 || request.minimumLogLevel > 4)) {
    throw ReqlogError.invalid(`minimum_log_level is ${request.minimumLogLevel}: levels are 0 (DEBUG) to 4 (CRITICAL)`);
  }
  if (has(f.numShards) && request.numShards < 0) {
    throw ReqlogError.invalid(`num_shards is ${request.numShards}: it must not be negative`);
  }
  if (has(f.appLogsPerRequest) && request.appLogsPerRequest < 0) {
    throw ReqlogError.invalid(`app_logs_per_request is ${request.appLogsPerRequest}: it must not be negative`);
  }
  if (has(f.startTime) && has(f.endTime) && request.startTime > request.endTime) {
    throw ReqlogError.invalid(`start_time (${request.startTime}) is after end_time (${request.endTime})`);
  }

  let requestIds: Uint8Array[] | undefined;
  if (request.requestId.length > 0) {
    if (has(f.startTime) || has(f.endTime) || has(f.offset)) {
      throw ReqlogError.invalid("request_id cannot be combined with start_time, end_time or offset");
    }
    if (request.requestId.length > maxCount) {
      throw ReqlogError.invalid(`request_id lists ${request.requestId.length} ids: at most ${maxCount}`);
    }
    requestIds = request.requestId;
  }

  let after: Cursor | undefined;
  if (has(f.offset)) {
    const bytes = request.offset!.requestId;
    if (bytes.length === 0) throw ReqlogError.invalid("offset is empty: pass back an offset exactly as a Read returned it");
    after = offsets.decode(request.appId, bytes);
  }

  return {
    appId: request.appId,
    versions,
    requestIds,
    startTime: has(f.startTime) ? request.startTime : undefined,
    endTime: has(f.endTime) ? request.endTime : undefined,
    after,
    includeIncomplete: request.includeIncomplete,
    minimumLogLevel: has(f.minimumLogLevel) ? request.minimumLogLevel : undefined,
    combinedRegex: has(f.combinedLogRegex) ? checkRegex(request.combinedLogRegex, "combined_log_regex", limits) : undefined,
    hostRegex: has(f.hostRegex) ? checkRegex(request.hostRegex, "host_regex", limits) : undefined,
    replicaIndex: has(f.replicaIndex) ? request.replicaIndex : undefined,
    count: Number(count),
    appLogs: request.includeAppLogs
      ? { perRequest: has(f.appLogsPerRequest) && request.appLogsPerRequest > 0 ? request.appLogsPerRequest : undefined }
      : undefined,
    combinedExtras: request.includeAll ? "all" : request.includeHost ? "host" : "none",
    budget: { rows: limits.readScanRows, ms: limits.readScanMs, bytes: limits.maxReadBytes },
  };
}

import { isFieldSet } from "@bufbuild/protobuf";
import { type DeleteRequest, DeleteRequestSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { type IpRange, parseIpRange } from "../domain/ip-range.js";
import type { Limits } from "../limits.js";
import { ReqlogError } from "../reqlog-error.js";
import { checkIdentifier } from "../write/identifiers.js";
import { checkRegex, maxCount } from "./read-plan.js";

/** Which requests of an app a Delete erases: every filter given must hold (plain data, as the store gets it). */
export interface DeletePlan {
  appId: string;
  requestIds?: Uint8Array[];
  /** Client addresses or ranges, ORed. */
  ips?: IpRange[];
  /** Sort time (µs): start inclusive, end exclusive, as Read. */
  startTime?: bigint;
  endTime?: bigint;
  /** RE2, partial match on the combined line (as Read's combined_log_regex). */
  combinedRegex?: string;
  /** Count the matches, erase nothing. */
  dryRun: boolean;
}

/** Request ids one Delete may name, at most (as a Read). */
export const maxDeleteIds = maxCount;
/** Client addresses and ranges one Delete may name, at most. */
export const maxDeleteIps = 1000;

/**
 * Validates a DeleteRequest into a plan; every error names the field. An
 * app id alone would erase the app: refused unless `all` says so.
 */
export function planDelete(request: DeleteRequest, limits: Limits): DeletePlan {
  const f = DeleteRequestSchema.field;
  const has = (field: (typeof f)[keyof typeof f]) => isFieldSet(request, field);
  checkIdentifier(request.appId, "app_id");
  if (request.requestId.length > maxDeleteIds) {
    throw ReqlogError.invalid(`request_id lists ${request.requestId.length} ids: at most ${maxDeleteIds}`);
  }
  if (request.ip.length > maxDeleteIps) {
    throw ReqlogError.invalid(`ip lists ${request.ip.length} addresses: at most ${maxDeleteIps}`);
  }
  const ips = request.ip.map((text, i) => {
    const range = parseIpRange(text.trim());
    if (!range) throw ReqlogError.invalid(`ip[${i}] is "${text}": not an IPv4 or IPv6 address or CIDR range (e.g. 203.0.113.9, 10.0.0.0/8, 2001:db8::/32)`);
    return range;
  });
  for (const name of ["startTime", "endTime"] as const) {
    if (has(f[name]) && request[name] < 0n) {
      throw ReqlogError.invalid(`${name === "startTime" ? "start_time" : "end_time"} is negative (${request[name]})`);
    }
  }
  if (has(f.startTime) && has(f.endTime) && request.startTime > request.endTime) {
    throw ReqlogError.invalid(`start_time (${request.startTime}) is after end_time (${request.endTime})`);
  }
  const plan: DeletePlan = {
    appId: request.appId,
    requestIds: request.requestId.length > 0 ? request.requestId : undefined,
    ips: ips.length > 0 ? ips : undefined,
    startTime: has(f.startTime) ? request.startTime : undefined,
    endTime: has(f.endTime) ? request.endTime : undefined,
    combinedRegex: has(f.combinedLogRegex) ? checkRegex(request.combinedLogRegex, "combined_log_regex", limits) : undefined,
    dryRun: request.dryRun,
  };
  const filtered = [plan.requestIds, plan.ips, plan.startTime, plan.endTime, plan.combinedRegex].some((x) => x !== undefined);
  if (!filtered && !request.all) {
    throw ReqlogError.invalid(
      `Delete names only app_id "${request.appId}": give a filter (request_id, ip, start_time/end_time, combined_log_regex), ` +
        "or set all to erase every request of the app",
    );
  }
  return plan;
}

import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { type RequestLog, RequestLogSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import type { ReadPlan } from "../../src/query/read-plan.js";

export const t0 = 1_795_000_000_000_000n;

/** A minimal valid request record (only the fields a writer must give), overridable. */
type LogInit = Exclude<MessageInitShape<typeof RequestLogSchema>, RequestLog>;

export function minimalLog(init: Omit<LogInit, "$typeName"> = {}): RequestLog {
  return create(RequestLogSchema, {
    appId: "forge",
    versionId: "v1",
    requestId: new TextEncoder().encode("req-1"),
    startTime: t0,
    method: "GET",
    resource: "/api/v1/repos/alice/app",
    ...init,
  });
}

export function rid(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

/** A regex Read of up to 100 requests of app forge, in progress included, with a budget no test reaches. */
export function regexReadPlan(pattern: string): ReadPlan {
  return {
    appId: "forge",
    includeIncomplete: true,
    combinedRegex: pattern,
    count: 100,
    combinedExtras: "none",
    budget: { rows: 1_000_000_000, ms: 1_000_000_000, bytes: 1_000_000_000 },
  };
}

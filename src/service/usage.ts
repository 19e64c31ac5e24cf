import { create } from "@bufbuild/protobuf";
import {
  type LogUsageRecord,
  LogUsageRecordSchema,
  type LogUsageRequest,
  type LogUsageResponse,
  LogUsageResponseSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { planUsage } from "../query/usage-plan.js";
import type { UsageBucket } from "../store/store.js";
import type { ServiceDeps, UnaryHandler } from "./handler.js";

const int32Max = 2 ** 31 - 1;

function record(b: Omit<UsageBucket, "versionId"> & { versionId?: string }): LogUsageRecord {
  return create(LogUsageRecordSchema, {
    ...(b.versionId !== undefined ? { versionId: b.versionId } : {}),
    startTime: b.startHour * 3600,
    endTime: b.endHour * 3600,
    count: BigInt(b.requests),
    totalSize: BigInt(b.bytes),
    // `records` is an int32 in the schema.
    records: Math.min(b.lines, int32Max),
  });
}

/** Usage: storage statistics per time bucket and version, from the hourly rollups. */
export function createUsageHandler({ store, auth }: ServiceDeps): UnaryHandler<LogUsageRequest, LogUsageResponse> {
  return async (request, call) => {
    const principal = auth.authenticate(call.metadata);
    const plan = planUsage(request);
    auth.authorize(principal, "read", [plan.appId]);
    const { buckets, versions } = store.usage(plan);
    if (plan.versionsOnly) {
      return create(LogUsageResponseSchema, {
        usage: versions.map((versionId) => create(LogUsageRecordSchema, { versionId })),
      });
    }
    const usage = buckets.map(record);
    const summary =
      buckets.length === 0
        ? create(LogUsageRecordSchema, { count: 0n, totalSize: 0n, records: 0 })
        : record({
            startHour: Math.min(...buckets.map((b) => b.startHour)),
            endHour: Math.max(...buckets.map((b) => b.endHour)),
            requests: buckets.reduce((s, b) => s + b.requests, 0),
            bytes: buckets.reduce((s, b) => s + b.bytes, 0),
            lines: buckets.reduce((s, b) => s + b.lines, 0),
          });
    return create(LogUsageResponseSchema, { usage, summary });
  };
}

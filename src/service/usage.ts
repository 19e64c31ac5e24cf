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
import type { UnaryHandler } from "./call-context.js";
import type { ServiceDeps } from "./service-deps.js";

const int32Max = 2 ** 31 - 1;

function record(b: UsageBucket): LogUsageRecord {
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

/** The sum of the buckets, over the span from the first one's start to the last one's end. */
function summaryOf(buckets: readonly UsageBucket[]): UsageBucket {
  // A loop, not Math.min(...spread): a reply may hold more buckets than a call takes arguments.
  const sum: UsageBucket = { startHour: Infinity, endHour: -Infinity, requests: 0, bytes: 0, lines: 0 };
  for (const b of buckets) {
    sum.startHour = Math.min(sum.startHour, b.startHour);
    sum.endHour = Math.max(sum.endHour, b.endHour);
    sum.requests += b.requests;
    sum.bytes += b.bytes;
    sum.lines += b.lines;
  }
  return sum;
}

/** Usage: storage statistics per time bucket and version, from the hourly rollups. */
export function createUsageHandler({ store, limits }: ServiceDeps): UnaryHandler<LogUsageRequest, LogUsageResponse> {
  return async (request, call) => {
    const plan = planUsage(request, limits);
    call.authorize([plan.appId]);
    const { buckets, versions } = await store.usage(plan, call.signal);
    if (plan.versionsOnly) {
      return create(LogUsageResponseSchema, {
        usage: versions.map((versionId) => create(LogUsageRecordSchema, { versionId })),
      });
    }
    const summary =
      buckets.length === 0
        ? create(LogUsageRecordSchema, { count: 0n, totalSize: 0n, records: 0 })
        : record(summaryOf(buckets));
    return create(LogUsageResponseSchema, { usage: buckets.map(record), summary });
  };
}

import fc from "fast-check";

const int64 = fc.bigInt({ min: -(1n << 63n), max: (1n << 63n) - 1n });
const int32 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
const bytes = fc.uint8Array({ maxLength: 200 });
const text = fc.string({ maxLength: 200, unit: "grapheme" });

/** The RequestLog fields a record must have (toBinary refuses a record without them). */
const required = [
  "appId", "versionId", "requestId", "ip", "startTime", "endTime", "latency", "mcycles", "method", "resource",
  "httpVersion", "status", "responseSize", "urlMapEntry", "combined",
] as const;

/**
 * A RequestLog's init (for create): every field besides line and offset,
 * any value of its type, the optional ones set or left unset.
 */
export const requestLogInit = fc.record(
  {
    appId: text, moduleId: text, versionId: text, requestId: bytes, ip: text, nickname: text,
    startTime: int64, endTime: int64, latency: int64, mcycles: int64, method: text, resource: text,
    httpVersion: text, status: int32, responseSize: int64, referrer: text, userAgent: text, urlMapEntry: text,
    combined: text, apiMcycles: int64, host: text, cost: fc.double(), taskQueueName: text, taskName: text,
    wasLoadingRequest: fc.boolean(), pendingTime: int64, replicaIndex: int32, finished: fc.boolean(), cloneKey: bytes,
    linesIncomplete: fc.boolean(), platformRelease: bytes, exitReason: int32, wasThrottledForTime: fc.boolean(),
    wasThrottledForRequests: fc.boolean(), throttledTime: int64, serverName: bytes,
  },
  { requiredKeys: [...required] },
);

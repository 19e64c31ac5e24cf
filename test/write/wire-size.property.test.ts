import { create, toBinary } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LogLineSchema, RequestLogSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { lineWireBytes, recordWireBytes } from "../../src/write/wire-size.js";

const int64 = fc.bigInt({ min: -(1n << 63n), max: (1n << 63n) - 1n });
const int32 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
const bytes = fc.uint8Array({ maxLength: 200 });
const text = fc.string({ maxLength: 200, unit: "grapheme" });

// Every field a RequestLog has besides line and offset; the optional ones set or left unset
// (toBinary refuses a record without its required fields).
const required = [
  "appId", "versionId", "requestId", "ip", "startTime", "endTime", "latency", "mcycles", "method", "resource",
  "httpVersion", "status", "responseSize", "urlMapEntry", "combined",
] as const;
const fields = fc.record(
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

describe("wire sizes", () => {
  it("recordWireBytes equals the serialized record without its lines and offset", () => {
    fc.assert(
      fc.property(fields, (init) => {
        const log = create(RequestLogSchema, init);
        expect(recordWireBytes(log)).toBe(toBinary(RequestLogSchema, log).length);
        // Lines and an offset are not counted.
        const withLines = create(RequestLogSchema, { ...init, offset: { requestId: new Uint8Array(9) }, line: [create(LogLineSchema, { time: 1n, level: 2, logMessage: "x" })] });
        expect(recordWireBytes(withLines)).toBe(recordWireBytes(log));
      }),
      { numRuns: 2000 },
    );
  });

  it("lineWireBytes equals what a line adds to a serialized RequestLog", () => {
    fc.assert(
      fc.property(int64, fc.integer({ min: 0, max: 4 }), text, (time, level, message) => {
        const line = create(LogLineSchema, { time, level, logMessage: message });
        const base = { appId: "a", versionId: "v", requestId: new Uint8Array(1), ip: "", startTime: 0n, endTime: 0n, latency: 0n, mcycles: 0n, method: "", resource: "", httpVersion: "", status: 0, responseSize: 0n, urlMapEntry: "", combined: "" };
        const without = toBinary(RequestLogSchema, create(RequestLogSchema, base)).length;
        const withLine = toBinary(RequestLogSchema, create(RequestLogSchema, { ...base, line: [line] })).length;
        expect(lineWireBytes({ time, level, message })).toBe(withLine - without);
      }),
      { numRuns: 1000 },
    );
  });
});

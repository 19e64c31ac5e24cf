import { create, toBinary } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LogLineSchema, RequestLogSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { lineWireBytes, recordWireBytes } from "../../src/write/wire-size.js";
import { requestLogInit as fields } from "../helpers/record-arbitrary.js";

const int64 = fc.bigInt({ min: -(1n << 63n), max: (1n << 63n) - 1n });
const text = fc.string({ maxLength: 200, unit: "grapheme" });

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

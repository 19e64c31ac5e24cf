import { create, equals, fromBinary, toBinary } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  IngestRequestSchema,
  LogLineSchema,
  RequestLinesSchema,
  RequestLogSchema,
  UserAppLogLineSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { type CapturedLine, type CapturedRecord, encodeLines, encodeRecord, type EncodedEntry } from "../../src/sdk/record-encoder.js";
import { missingRequiredFields } from "../../src/write/required-fields.js";

const text = (maxLength: number) => fc.string({ unit: "binary", maxLength });
const identifier = fc.string({ unit: "binary", minLength: 1, maxLength: 80 });
const micros = fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER });
const capturedLine: fc.Arbitrary<CapturedLine> = fc.record({ time: micros, level: fc.integer({ min: 0, max: 4 }), message: text(400) });
const captured: fc.Arbitrary<CapturedRecord> = fc
  .record({
    requestId: identifier,
    startTime: micros,
    duration: fc.option(fc.integer({ min: 0, max: 10 ** 9 }), { nil: undefined }),
    method: identifier,
    resource: text(300),
    httpVersion: text(10),
    status: fc.integer({ min: 0, max: 999 }),
    responseSize: micros,
    ip: text(45),
    userAgent: text(200),
    referrer: text(200),
    host: text(100),
    urlMapEntry: text(150),
    wasLoadingRequest: fc.boolean(),
    lines: fc.array(capturedLine, { maxLength: 5 }),
  })
  .map(({ duration, ...r }) => ({
    ...r,
    // In progress (no end) or ended; no later than 2^53 µs.
    endTime: duration === undefined ? 0 : Math.min(Number.MAX_SAFE_INTEGER, r.startTime + duration),
    finished: duration !== undefined,
  }));
const identity = fc.record({
  appId: identifier,
  moduleId: identifier,
  versionId: identifier,
  cloneKey: fc.uint8Array({ minLength: 1, maxLength: 40 }),
});

/** What protobuf-es decodes from an IngestRequest holding the entry. */
function decoded(entry: EncodedEntry) {
  const message = create(IngestRequestSchema, { batchId: 7n });
  message.$unknown = [{ no: entry.field, wireType: 2, data: entry.data }];
  return fromBinary(IngestRequestSchema, toBinary(IngestRequestSchema, message));
}

const utf8 = (s: string) => new TextEncoder().encode(s);

describe("the SDK's record encoder", () => {
  it("writes what protobuf-es writes for the same RequestLog, every required field set", () => {
    fc.assert(
      fc.property(identity, captured, (id, r) => {
        const entry = encodeRecord(id, r);
        const got = decoded(entry);
        expect(got.batchId).toBe(7n);
        expect(got.log).toHaveLength(1);
        const expected = create(RequestLogSchema, {
          appId: id.appId,
          moduleId: id.moduleId,
          versionId: id.versionId,
          requestId: utf8(r.requestId),
          ip: r.ip,
          startTime: BigInt(r.startTime),
          endTime: BigInt(r.endTime),
          latency: BigInt(r.endTime > r.startTime ? r.endTime - r.startTime : 0),
          mcycles: 0n,
          method: r.method,
          resource: r.resource,
          httpVersion: r.httpVersion,
          status: r.status,
          responseSize: BigInt(r.responseSize),
          urlMapEntry: r.urlMapEntry,
          combined: "",
          cloneKey: id.cloneKey,
          ...(r.referrer ? { referrer: r.referrer } : {}),
          ...(r.userAgent ? { userAgent: r.userAgent } : {}),
          ...(r.host ? { host: r.host } : {}),
          ...(r.wasLoadingRequest ? { wasLoadingRequest: true } : {}),
          ...(r.finished ? {} : { finished: false }),
          line: r.lines.map((l) => create(LogLineSchema, { time: BigInt(l.time), level: l.level, logMessage: l.message })),
        });
        // protobuf-es's own bytes of the same record decode to the same message as ours.
        const theirs = fromBinary(RequestLogSchema, toBinary(RequestLogSchema, expected));
        expect(equals(RequestLogSchema, got.log[0]!, theirs)).toBe(true);
        expect(got.log[0]!.line.map((l) => l.logMessage)).toEqual(theirs.line.map((l) => l.logMessage));
        expect(missingRequiredFields(RequestLogSchema, got.log[0]!)).toEqual([]);
        expect([entry.field, entry.record, entry.lines]).toEqual([2, 1, r.lines.length]);
      }),
      { numRuns: 300 },
    );
  });

  it("writes what protobuf-es writes for the same RequestLines", () => {
    fc.assert(
      fc.property(identity, identifier, fc.array(capturedLine, { maxLength: 8 }), (id, requestId, lines) => {
        const entry = encodeLines(id, requestId, lines);
        const got = decoded(entry);
        const expected = create(RequestLinesSchema, {
          appId: id.appId,
          moduleId: id.moduleId,
          versionId: id.versionId,
          requestId: utf8(requestId),
          line: lines.map((l) => create(UserAppLogLineSchema, { timestampUsec: BigInt(l.time), level: BigInt(l.level), message: l.message })),
        });
        expect(got.lines).toHaveLength(1);
        expect(equals(RequestLinesSchema, got.lines[0]!, fromBinary(RequestLinesSchema, toBinary(RequestLinesSchema, expected)))).toBe(true);
        expect(missingRequiredFields(RequestLinesSchema, got.lines[0]!)).toEqual([]);
        expect([entry.field, entry.record, entry.lines]).toEqual([3, 0, lines.length]);
      }),
      { numRuns: 300 },
    );
  });

  it("grows its buffer for a record larger than it", () => {
    const huge = "é".repeat(100_000);
    const entry = encodeRecord(
      { appId: "a", moduleId: "m", versionId: "v", cloneKey: utf8("i") },
      { requestId: "r", startTime: 1, endTime: 2, method: "GET", resource: "/", httpVersion: "HTTP/1.1", status: 200, responseSize: 0, ip: "", userAgent: huge, referrer: "", host: "", urlMapEntry: "", finished: true, wasLoadingRequest: false, lines: [{ time: 1, level: 1, message: huge }] },
    );
    const log = decoded(entry).log[0]!;
    expect([log.userAgent.length, log.line[0]!.logMessage.length]).toEqual([100_000, 100_000]);
  });
});

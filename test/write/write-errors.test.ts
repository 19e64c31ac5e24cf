import { create, toBinary } from "@bufbuild/protobuf";
import { beforeEach, describe, expect, it } from "vitest";
import { LogLineSchema, WriteRequestSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { Code } from "../../src/reqlog-error.js";
import { lenient } from "../helpers/lenient-schema.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { callError, rawUnaryCall } from "../helpers/test-client.js";
import { useTestServer } from "../helpers/test-server.js";

const ts = useTestServer({ limits: { maxRecordsPerWrite: 3, maxMessageBytes: 64 * 1024 } });
const write = ts.write;
beforeEach(async () => {
  // Something stored that every refused call must leave as it is.
  await write(minimalLog({ requestId: rid("kept"), line: [create(LogLineSchema, { time: t0, level: 2, logMessage: "kept" })] }));
});

function snapshot() {
  return {
    // Lines are kept in their request's row.
    requests: ts.db.prepare("SELECT * FROM requests ORDER BY id").all(),
    versions: ts.db.prepare("SELECT * FROM versions ORDER BY id").all(),
    strings: ts.db.prepare("SELECT * FROM strings ORDER BY id").all(),
  };
}

/** The message with these fields unset, as a client that leaves them out sends it. */
function without<T extends object>(message: T, ...fields: (keyof T)[]): T {
  for (const f of fields) delete message[f];
  return message;
}

/** A WriteRequest whose one record has app_id set to bytes that are not UTF-8. */
function invalidUtf8Write(): Uint8Array {
  const good = toBinary(lenient(WriteRequestSchema), create(WriteRequestSchema, { log: [minimalLog({ appId: "\u00e9" })] }));
  const bytes = Buffer.from(good);
  const at = bytes.indexOf(Buffer.from("\u00e9", "utf8"));
  bytes[at] = 0xff;
  return bytes;
}

const cases: [string, () => Promise<unknown>, number, string | RegExp][] = [
  [
    "a record missing required fields, naming each",
    () => write(without(minimalLog(), "method", "startTime")),
    Code.INVALID_ARGUMENT,
    "required fields not set: log[0].start_time, log[0].method",
  ],
  [
    "a record missing its request id",
    () => write(minimalLog(), without(minimalLog({ requestId: rid("x") }), "requestId")),
    Code.INVALID_ARGUMENT,
    "required field not set: log[1].request_id",
  ],
  [
    "an app line missing its level",
    () => write(minimalLog({ line: [without(create(LogLineSchema, { time: t0, level: 1, logMessage: "m" }), "level")] })),
    Code.INVALID_ARGUMENT,
    "required field not set: log[0].line[0].level",
  ],
  ["an empty app id", () => write(minimalLog({ appId: "" })), Code.INVALID_ARGUMENT, "log[0].app_id is empty"],
  [
    "a request id over 256 bytes",
    () => write(minimalLog({ requestId: new Uint8Array(257) })),
    Code.INVALID_ARGUMENT,
    "log[0].request_id is 257 bytes long, over the maximum of 256",
  ],
  [
    "an end time before the start time",
    () => write(minimalLog({ endTime: t0 - 1n })),
    Code.INVALID_ARGUMENT,
    `log[0].end_time (${t0 - 1n}) is before log[0].start_time (${t0})`,
  ],
  [
    // 2^63 - 1 µs: it sorted first forever, its combined line read [NaN/undefined/NaN…], and Stats stepped to it.
    "an end time far in the future, naming the field and the limit",
    () => write(minimalLog({ endTime: 2n ** 63n - 1n })),
    Code.INVALID_ARGUMENT,
    /^log\[0\]\.end_time, 9223372036854775807 µs, is about 29\d{4} years ahead of the server's clock, over the limit max-future-seconds=86400: times are microseconds since 1970-01-01T00:00:00Z$/,
  ],
  [
    "a start time three days ahead of the server's clock",
    () => write(minimalLog({ startTime: BigInt(Date.now() + 3 * 86_400_000) * 1000n })),
    Code.INVALID_ARGUMENT,
    /^log\[0\]\.start_time, 20\d\d-\d\d-\d\dT[\d:.]+Z, is about 3 days ahead of the server's clock, over the limit max-future-seconds=86400: /,
  ],
  [
    "an end time derived from a latency that puts it in the future",
    () => write(minimalLog({ latency: 10n ** 15n })),
    Code.INVALID_ARGUMENT,
    /^log\[0\]\.end_time \(start_time \+ latency\), .*, is about \d+ years ahead of the server's clock, over the limit max-future-seconds=86400: /,
  ],
  [
    "an app line time far in the future",
    () => write(minimalLog({ line: [create(LogLineSchema, { time: 10n ** 18n, level: 1, logMessage: "m" })] })),
    Code.INVALID_ARGUMENT,
    /^log\[0\]\.line\[0\]\.time, 1000000000000000000 µs, is about \d+ years ahead of the server's clock, over the limit max-future-seconds=86400: /,
  ],
  ["a start time before 1970", () => write(minimalLog({ startTime: -1n, endTime: t0 })), Code.INVALID_ARGUMENT, "log[0].start_time is negative (-1)"],
  ["a negative status", () => write(minimalLog({ status: -200 })), Code.INVALID_ARGUMENT, "log[0].status is negative (-200)"],
  ["a negative response size", () => write(minimalLog({ responseSize: -1n })), Code.INVALID_ARGUMENT, "log[0].response_size is negative (-1)"],
  ["a negative latency", () => write(minimalLog({ latency: -5n, endTime: t0 + 10n })), Code.INVALID_ARGUMENT, "log[0].latency is negative (-5)"],
  [
    "an app line level outside 0..4",
    () => write(minimalLog({ line: [create(LogLineSchema, { time: t0, level: 9, logMessage: "m" })] })),
    Code.INVALID_ARGUMENT,
    "log[0].line[0].level is 9: levels are 0 (DEBUG) to 4 (CRITICAL)",
  ],
  [
    "more records than max-records-per-write",
    () => write(...["a", "b", "c", "d"].map((id) => minimalLog({ requestId: rid(id) }))),
    Code.INVALID_ARGUMENT,
    "number of records in Write is 4, over the limit max-records-per-write=3",
  ],
  [
    "a message over max-message-bytes",
    () => write(minimalLog({ userAgent: "x".repeat(70 * 1024) })),
    Code.RESOURCE_EXHAUSTED,
    /^request message is 717\d\d bytes, over the limit max-message-bytes=65536$/,
  ],
  [
    "bytes that are not a WriteRequest",
    () => rawUnaryCall(ts.server.address, "/reqlog.v1.LogService/Write", new Uint8Array([0x0a, 0x05, 0x01])),
    Code.INVALID_ARGUMENT,
    /^cannot decode reqlog\.v1\.WriteRequest: /,
  ],
  [
    "a string that is not UTF-8",
    () => rawUnaryCall(ts.server.address, "/reqlog.v1.LogService/Write", invalidUtf8Write()),
    Code.INVALID_ARGUMENT,
    /^cannot decode reqlog\.v1\.WriteRequest: .*UTF-8/i,
  ],
];

describe("Write refusals", () => {
  it.each(cases)("refuses %s, with INVALID_REQUEST and nothing changed", async (_name, call, code, message) => {
    const before = snapshot();
    const err = await callError(call());
    expect(err.code).toBe(code);
    if (typeof message === "string") expect(err.details).toBe(message);
    else expect(err.details).toMatch(message);
    expect(err.reason).toBe("INVALID_REQUEST");
    expect(snapshot()).toEqual(before);
  });
});

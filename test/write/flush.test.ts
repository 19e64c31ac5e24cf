import { create, toBinary } from "@bufbuild/protobuf";
import { status } from "@grpc/grpc-js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  FlushRequestSchema,
  UserAppLogGroupSchema,
  UserAppLogLineSchema,
  WriteRequestSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { lenient } from "../helpers/lenient-schema.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { callError, unaryCall } from "../helpers/test-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let ts: TestServer;
beforeEach(async () => {
  ts = await startTestServer({ limits: { maxLinesPerFlush: 5, maxLineBytes: 100 } });
});
afterEach(async () => {
  await ts.close();
});

const context = { "reqlog-app-id": "forge", "reqlog-version-id": "v1", "reqlog-request-id": "req-1" };

type LineInit = { timestampUsec?: bigint; level?: bigint; message?: string };

function group(lines: LineInit[]): Uint8Array {
  const g = create(UserAppLogGroupSchema, { logLine: lines.map((l) => create(UserAppLogLineSchema, l)) });
  return toBinary(lenient(UserAppLogGroupSchema), g);
}

function flush(logs: Uint8Array, metadata: Record<string, string | Buffer> = context) {
  return unaryCall(ts.client, "flush", create(FlushRequestSchema, { logs }), metadata);
}

const twoLines = group([
  { timestampUsec: t0 + 10n, level: 1n, message: "opening repo" },
  { timestampUsec: t0 + 20n, level: 3n, message: "disk quota exceeded" },
]);

function snapshot() {
  return {
    requests: ts.db.prepare("SELECT * FROM requests ORDER BY id").all(),
    lines: ts.db.prepare("SELECT * FROM lines ORDER BY request_key, time, pos").all(),
  };
}

describe("Flush", () => {
  it("keeps lines that arrive before their record, as an in-progress request", async () => {
    ts.setNow(t0 + 1_000n);
    await flush(twoLines);
    const [pending] = ts.store.getRequests("forge", [rid("req-1")]);
    expect(pending!.finished).toBe(false);
    expect(pending!.startTime).toBe(t0 + 10n);
    expect(pending!.line.map((l) => [l.time, l.level, l.logMessage])).toEqual([
      [t0 + 10n, 1, "opening repo"],
      [t0 + 20n, 3, "disk quota exceeded"],
    ]);

    await unaryCall(ts.client, "write", create(WriteRequestSchema, { log: [minimalLog({ endTime: t0 + 50n })] }));
    const [done] = ts.store.getRequests("forge", [rid("req-1")]);
    expect(done!.finished).toBe(true);
    expect(done!.startTime).toBe(t0);
    expect(done!.line).toHaveLength(2);
  });

  it("does not double lines when a flush is retried", async () => {
    await flush(twoLines);
    await flush(twoLines);
    expect(ts.db.prepare("SELECT count(*) FROM lines").pluck().get()).toBe(2);
    expect(ts.db.prepare("SELECT count(*) FROM requests").pluck().get()).toBe(1);
  });

  it("keeps two equal lines at different positions of one flush", async () => {
    await flush(group([
      { timestampUsec: t0, level: 1n, message: "tick" },
      { timestampUsec: t0, level: 1n, message: "tick" },
    ]));
    expect(ts.db.prepare("SELECT count(*) FROM lines").pluck().get()).toBe(2);
  });

  it("attaches lines to a record written earlier and records the module", async () => {
    await unaryCall(ts.client, "write", create(WriteRequestSchema, { log: [minimalLog({ moduleId: "git" })] }));
    await flush(twoLines, { ...context, "reqlog-module-id": "git" });
    const [stored] = ts.store.getRequests("forge", [rid("req-1")]);
    expect(stored!.finished).toBe(true);
    expect(stored!.moduleId).toBe("git");
    expect(stored!.line).toHaveLength(2);
  });

  it("accepts the request id as binary metadata", async () => {
    await flush(twoLines, {
      "reqlog-app-id": "forge",
      "reqlog-version-id": "v1",
      "reqlog-request-id-bin": Buffer.from([0xde, 0xad, 0xbe, 0xef]),
    });
    expect(ts.store.getRequests("forge", [new Uint8Array([0xde, 0xad, 0xbe, 0xef])])).toHaveLength(1);
  });

  const { "reqlog-app-id": _a, ...noApp } = context;
  const { "reqlog-version-id": _v, ...noVersion } = context;
  const { "reqlog-request-id": _r, ...noRequest } = context;
  const refusals: [string, () => Promise<unknown>, number, string][] = [
    ["no app id", () => flush(twoLines, noApp), status.INVALID_ARGUMENT, "Flush needs call metadata reqlog-app-id"],
    ["no version id", () => flush(twoLines, noVersion), status.INVALID_ARGUMENT, "Flush needs call metadata reqlog-version-id"],
    [
      "no request id",
      () => flush(twoLines, noRequest),
      status.INVALID_ARGUMENT,
      "Flush needs call metadata reqlog-request-id (or reqlog-request-id-bin)",
    ],
    ["an empty app id", () => flush(twoLines, { ...context, "reqlog-app-id": "" }), status.INVALID_ARGUMENT, "call metadata reqlog-app-id is empty"],
    [
      "undecodable logs bytes",
      () => flush(new Uint8Array([0x12, 0xff, 0x01])),
      status.INVALID_ARGUMENT,
      "cannot decode FlushRequest.logs as a UserAppLogGroup: premature EOF",
    ],
    [
      "a message that is not UTF-8",
      () => {
        const bytes = Buffer.from(group([{ timestampUsec: t0, level: 1n, message: "caf\u00e9" }]));
        bytes[bytes.indexOf(0xc3)] = 0xff;
        return flush(bytes);
      },
      status.INVALID_ARGUMENT,
      "cannot decode FlushRequest.logs as a UserAppLogGroup: The encoded data was not valid for encoding utf-8",
    ],
    [
      "a line without a message",
      () => flush(group([{ timestampUsec: t0, level: 1n }])),
      status.INVALID_ARGUMENT,
      "FlushRequest.logs: required fields not set: log_line[0].message",
    ],
    [
      "a level above 4",
      () => flush(group([{ timestampUsec: t0, level: 7n, message: "x" }])),
      status.INVALID_ARGUMENT,
      "log_line[0].level is 7: levels are 0 (DEBUG) to 4 (CRITICAL)",
    ],
    [
      "a negative level",
      () => flush(group([{ timestampUsec: t0, level: -1n, message: "x" }])),
      status.INVALID_ARGUMENT,
      "log_line[0].level is -1: levels are 0 (DEBUG) to 4 (CRITICAL)",
    ],
    [
      "a line over max-line-bytes",
      () => flush(group([{ timestampUsec: t0, level: 1n, message: "x".repeat(101) }])),
      status.RESOURCE_EXHAUSTED,
      "log_line[0] message size in bytes is 101, over the limit max-line-bytes=100",
    ],
    [
      "more lines than max-lines-per-flush",
      () => flush(group(Array.from({ length: 6 }, (_, i) => ({ timestampUsec: t0 + BigInt(i), level: 0n, message: "m" })))),
      status.INVALID_ARGUMENT,
      "number of lines in log_line is 6, over the limit max-lines-per-flush=5",
    ],
  ];
  it.each(refusals)("refuses %s with a clear error and changes nothing", async (_name, call, code, message) => {
    await flush(twoLines); // something stored that must stay as it is
    const before = snapshot();
    const err = await callError(call());
    expect(err).toEqual({ code, details: message, reason: "INVALID_REQUEST" });
    expect(snapshot()).toEqual(before);
  });
});

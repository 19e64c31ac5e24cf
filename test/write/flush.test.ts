import { create, toBinary } from "@bufbuild/protobuf";
import { encodeBinaryHeader } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { UserAppLogGroupSchema, UserAppLogLineSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { Code } from "../../src/reqlog-error.js";
import { lenient } from "../helpers/lenient-schema.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { callError } from "../helpers/test-client.js";
import { useTestServer } from "../helpers/test-server.js";

const ts = useTestServer({ limits: { maxLinesPerFlush: 5, maxLineBytes: 100 } });

const context = { "reqlog-app-id": "forge", "reqlog-version-id": "v1", "reqlog-request-id": "req-1" };

type LineInit = { timestampUsec?: bigint; level?: bigint; message?: string };

function group(lines: LineInit[]): Uint8Array {
  const g = create(UserAppLogGroupSchema, { logLine: lines.map((l) => create(UserAppLogLineSchema, l)) });
  return toBinary(lenient(UserAppLogGroupSchema), g);
}

function flush(logs: Uint8Array, headers: Record<string, string> = context) {
  return ts.client.flush({ logs }, { headers });
}

const twoLines = group([
  { timestampUsec: t0 + 10n, level: 1n, message: "opening repo" },
  { timestampUsec: t0 + 20n, level: 3n, message: "disk quota exceeded" },
]);

function snapshot() {
  return {
    // Lines are kept in their request's row.
    requests: ts.db.prepare("SELECT * FROM requests ORDER BY id").all(),
    strings: ts.db.prepare("SELECT * FROM strings ORDER BY id").all(),
  };
}

/** App lines stored, in all requests. */
const storedLines = () => ts.db.prepare("SELECT coalesce(sum(line_count), 0) FROM requests").pluck().get();

describe("Flush", () => {
  it("keeps lines that arrive before their record, as an in-progress request", async () => {
    ts.setNow(t0 + 1_000n);
    await flush(twoLines);
    const [pending] = await ts.stored(rid("req-1"));
    expect(pending!.finished).toBe(false);
    expect(pending!.startTime).toBe(t0 + 10n);
    expect(pending!.line.map((l) => [l.time, l.level, l.logMessage])).toEqual([
      [t0 + 10n, 1, "opening repo"],
      [t0 + 20n, 3, "disk quota exceeded"],
    ]);

    await ts.write(minimalLog({ endTime: t0 + 50n }));
    const [done] = await ts.stored(rid("req-1"));
    expect(done!.finished).toBe(true);
    expect(done!.startTime).toBe(t0);
    expect(done!.line).toHaveLength(2);
  });

  it("does not double lines when a flush is retried", async () => {
    await flush(twoLines);
    await flush(twoLines);
    expect(storedLines()).toBe(2);
    expect(ts.db.prepare("SELECT count(*) FROM requests").pluck().get()).toBe(1);
  });

  it("keeps two equal lines at different positions of one flush", async () => {
    await flush(group([
      { timestampUsec: t0, level: 1n, message: "tick" },
      { timestampUsec: t0, level: 1n, message: "tick" },
    ]));
    expect(storedLines()).toBe(2);
  });

  it("attaches lines to a record written earlier and records the module", async () => {
    await ts.write(minimalLog({ moduleId: "git" }));
    await flush(twoLines, { ...context, "reqlog-module-id": "git" });
    const [stored] = await ts.stored(rid("req-1"));
    expect(stored!.finished).toBe(true);
    expect(stored!.moduleId).toBe("git");
    expect(stored!.line).toHaveLength(2);
  });

  it("accepts the request id as binary metadata", async () => {
    const requestId = new Uint8Array([0xde, 0xad, 0xbe, 0xef]);
    await flush(twoLines, {
      "reqlog-app-id": "forge",
      "reqlog-version-id": "v1",
      "reqlog-request-id-bin": encodeBinaryHeader(requestId),
    });
    expect(await ts.stored(requestId)).toHaveLength(1);
  });

  const { "reqlog-app-id": _a, ...noApp } = context;
  const { "reqlog-version-id": _v, ...noVersion } = context;
  const { "reqlog-request-id": _r, ...noRequest } = context;
  const refusals: [string, () => Promise<unknown>, number, string][] = [
    ["no app id", () => flush(twoLines, noApp), Code.INVALID_ARGUMENT, "Flush needs call metadata reqlog-app-id"],
    ["no version id", () => flush(twoLines, noVersion), Code.INVALID_ARGUMENT, "Flush needs call metadata reqlog-version-id"],
    [
      "no request id",
      () => flush(twoLines, noRequest),
      Code.INVALID_ARGUMENT,
      "Flush needs call metadata reqlog-request-id (or reqlog-request-id-bin)",
    ],
    ["an empty app id", () => flush(twoLines, { ...context, "reqlog-app-id": "" }), Code.INVALID_ARGUMENT, "call metadata reqlog-app-id is empty"],
    [
      "undecodable logs bytes",
      () => flush(new Uint8Array([0x12, 0xff, 0x01])),
      Code.INVALID_ARGUMENT,
      "cannot decode FlushRequest.logs as a UserAppLogGroup: premature EOF",
    ],
    [
      "a message that is not UTF-8",
      () => {
        const bytes = Buffer.from(group([{ timestampUsec: t0, level: 1n, message: "caf\u00e9" }]));
        bytes[bytes.indexOf(0xc3)] = 0xff;
        return flush(bytes);
      },
      Code.INVALID_ARGUMENT,
      "cannot decode FlushRequest.logs as a UserAppLogGroup: The encoded data was not valid for encoding utf-8",
    ],
    [
      "a line without a message",
      () => flush(group([{ timestampUsec: t0, level: 1n }])),
      Code.INVALID_ARGUMENT,
      "FlushRequest.logs: required fields not set: log_line[0].message",
    ],
    [
      "a level above 4",
      () => flush(group([{ timestampUsec: t0, level: 7n, message: "x" }])),
      Code.INVALID_ARGUMENT,
      "log_line[0].level is 7: levels are 0 (DEBUG) to 4 (CRITICAL)",
    ],
    [
      "a negative level",
      () => flush(group([{ timestampUsec: t0, level: -1n, message: "x" }])),
      Code.INVALID_ARGUMENT,
      "log_line[0].level is -1: levels are 0 (DEBUG) to 4 (CRITICAL)",
    ],
    [
      "a line over max-line-bytes",
      () => flush(group([{ timestampUsec: t0, level: 1n, message: "x".repeat(101) }])),
      Code.RESOURCE_EXHAUSTED,
      "log_line[0] message size in bytes is 101, over the limit max-line-bytes=100",
    ],
    [
      "more lines than max-lines-per-flush",
      () => flush(group(Array.from({ length: 6 }, (_, i) => ({ timestampUsec: t0 + BigInt(i), level: 0n, message: "m" })))),
      Code.INVALID_ARGUMENT,
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

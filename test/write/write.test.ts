import { create, equals, isFieldSet } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  LogLineSchema,
  LogOffsetSchema,
  type RequestLog,
  RequestLogSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { Code } from "../../src/reqlog-error.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { callError } from "../helpers/test-client.js";
import { useTestServer } from "../helpers/test-server.js";

const ts = useTestServer();
const write = ts.write;

function count(table: string): number {
  return ts.db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;
}

/** A record with every RequestLog field set to a non-default value. */
function fullLog(): RequestLog {
  return create(RequestLogSchema, {
    appId: "forge",
    moduleId: "api",
    versionId: "v42",
    requestId: new Uint8Array([0, 1, 2, 250, 255]),
    ip: "203.0.113.9",
    nickname: "alice",
    startTime: t0,
    endTime: t0 + 1234n,
    latency: 1234n,
    mcycles: 77n,
    method: "POST",
    resource: "/api/v1/repos/alice/app/branches",
    httpVersion: "HTTP/2.0",
    status: 201,
    responseSize: 9_007_199_254_740_993n, // above 2^53: must not lose precision
    referrer: "https://forge.example/alice/app",
    userAgent: "git/2.39.5",
    urlMapEntry: "/api/.*",
    combined: "custom combined line",
    apiMcycles: 12n,
    host: "forge.example",
    cost: 0.000123,
    taskQueueName: "default",
    taskName: "task-7",
    wasLoadingRequest: true,
    pendingTime: 55n,
    replicaIndex: 3,
    finished: true,
    cloneKey: new Uint8Array([9, 8, 7]),
    line: [
      create(LogLineSchema, { time: t0 + 10n, level: 1, logMessage: "creating branch" }),
      create(LogLineSchema, { time: t0 + 20n, level: 3, logMessage: "ref locked, retrying" }),
    ],
    linesIncomplete: true,
    platformRelease: new Uint8Array([1, 9]),
    exitReason: 2,
    wasThrottledForTime: true,
    wasThrottledForRequests: true,
    throttledTime: 99n,
    serverName: new Uint8Array([115, 49]),
  });
}

describe("Write", () => {
  it("stores every RequestLog field and reads it back identical", async () => {
    const log = fullLog();
    for (const field of RequestLogSchema.fields) {
      if (field.name === "offset") continue; // computed by Read, never stored
      expect(isFieldSet(log, field), `fixture sets ${field.name}`).toBe(true);
    }
    const reply = await write(log);
    expect(reply.records).toBe(1);
    expect(reply.lines).toBe(2);
    const [stored] = await ts.stored(log.requestId);
    expect(stored).toBeDefined();
    expect(equals(RequestLogSchema, stored!, log)).toBe(true);
  });

  it("leaves optional fields unset when the writer left them unset, and derives required ones", async () => {
    await write(minimalLog({ endTime: t0 + 500n, ip: "198.51.100.7", status: 404, httpVersion: "HTTP/1.1" }));
    const [stored] = await ts.stored(rid("req-1"));
    const unset = RequestLogSchema.fields.filter((f) => !isFieldSet(stored!, f)).map((f) => f.name);
    expect(unset.sort()).toEqual(
      [
        "module_id",
        "offset",
        "nickname",
        "referrer",
        "user_agent",
        "api_mcycles",
        "host",
        "cost",
        "task_queue_name",
        "task_name",
        "was_loading_request",
        "pending_time",
        "replica_index",
        "finished",
        "clone_key",
        "line",
        "lines_incomplete",
        "platform_release",
        "exit_reason",
        "was_throttled_for_time",
        "was_throttled_for_requests",
        "throttled_time",
        "server_name",
      ].sort(),
    );
    expect(stored!.moduleId).toBe("default");
    expect(stored!.finished).toBe(true);
    expect(stored!.replicaIndex).toBe(-1);
    expect(stored!.latency).toBe(500n);
    expect(stored!.mcycles).toBe(0n);
    expect(stored!.urlMapEntry).toBe("");
    expect(stored!.combined).toBe(
      '198.51.100.7 - - [18/Nov/2026:11:06:40 +0000] "GET /api/v1/repos/alice/app HTTP/1.1" 404 0 "-" "-"',
    );
  });

  it("derives end_time from latency, and treats 0 and empty derivable fields as unset", async () => {
    await write(minimalLog({ latency: 700n, endTime: 0n, combined: "" }));
    const [stored] = await ts.stored(rid("req-1"));
    expect(stored!.endTime).toBe(t0 + 700n);
    expect(stored!.latency).toBe(700n);
    expect(stored!.combined).toContain('"GET /api/v1/repos/alice/app" 0 0 "-" "-"');
  });

  it("stores a record written twice once, with its lines once", async () => {
    const log = fullLog();
    await write(log);
    const again = await write(log);
    expect(again.lines).toBe(0);
    expect(count("requests")).toBe(1);
    expect(ts.db.prepare("SELECT sum(line_count) FROM requests").pluck().get()).toBe(2);
  });

  it("updates a record in place: an in-progress request completed by a later write", async () => {
    ts.setNow(t0 + 5_000n);
    await write(minimalLog({ finished: false }));
    let [stored] = await ts.stored(rid("req-1"));
    expect(stored!.finished).toBe(false);
    expect(stored!.endTime).toBe(0n);
    expect(ts.db.prepare("SELECT sort_time FROM requests").pluck().safeIntegers().get()).toBe(t0 + 5_000n);

    await write(minimalLog({ finished: true, endTime: t0 + 900n, status: 200 }));
    [stored] = await ts.stored(rid("req-1"));
    expect(stored!.finished).toBe(true);
    expect(stored!.endTime).toBe(t0 + 900n);
    expect(stored!.status).toBe(200);
    expect(count("requests")).toBe(1);
    expect(ts.db.prepare("SELECT sort_time FROM requests").pluck().safeIntegers().get()).toBe(t0 + 900n);
  });

  it("does not turn a finished record back into an in-progress one", async () => {
    await write(minimalLog({ finished: true, endTime: t0 + 900n, status: 200 }));
    await write(minimalLog({ finished: false, status: 0 }));
    const [stored] = await ts.stored(rid("req-1"));
    expect(stored!.finished).toBe(true);
    expect(stored!.status).toBe(200);
  });

  it("ignores an offset sent inside a written record: Read gives each record its own, which pages on", async () => {
    const forged = create(LogOffsetSchema, { requestId: rid("forged") });
    await write(
      minimalLog({ requestId: rid("old"), endTime: t0 + 1n, offset: forged }),
      minimalLog({ requestId: rid("new"), endTime: t0 + 2n, offset: forged }),
    );
    const page = await ts.read({ count: 1n });
    const [newest] = page.log;
    expect(newest!.requestId).toEqual(rid("new"));
    expect(newest!.offset!.requestId).not.toEqual(forged.requestId);
    expect(newest!.offset!.requestId).toEqual(page.offset!.requestId);
    const next = await ts.read({ count: 1n, offset: newest!.offset });
    expect(next.log.map((l) => l.requestId)).toEqual([rid("old")]);
    expect(next.log[0]!.offset!.requestId).not.toEqual(forged.requestId);
  });

  it("stores nothing of a batch in which one record is invalid", async () => {
    const err = await callError(
      write(minimalLog({ requestId: rid("ok-1") }), minimalLog({ requestId: rid("bad"), method: "" })),
    );
    expect(err.code).toBe(Code.INVALID_ARGUMENT);
    expect(err.details).toBe("log[1].method is empty");
    expect(count("requests")).toBe(0);
  });
});

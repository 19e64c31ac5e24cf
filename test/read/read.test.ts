import { create, isFieldSet } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  LogLineSchema,
  LogModuleVersionSchema,
  LogOffsetSchema,
  type LogReadResponse,
  LogReadResponseSchema,
  RequestLogSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { Code } from "../../src/reqlog-error.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { callError } from "../helpers/test-client.js";
import { type ReadInit, useTestServer } from "../helpers/test-server.js";

const ts = useTestServer();
const { read, write } = ts;

const ids = (r: LogReadResponse) => r.log.map((l) => new TextDecoder().decode(l.requestId));

/** A small forge: a few apps, modules, versions, statuses, hosts, levels. */
async function seed() {
  ts.setNow(t0 + 1_000n); // in-progress requests sort at the time of their last update
  const line = (level: number) => create(LogLineSchema, { time: t0, level, logMessage: `level ${level}` });
  await write(
    minimalLog({ requestId: rid("a"), endTime: t0 + 100n, status: 200, host: "forge.example", resource: "/api/v1/repos/a/b/commits", line: [line(1)] }),
    minimalLog({ requestId: rid("b"), endTime: t0 + 200n, status: 302, host: "forge.example", resource: "/api/v1/repos/a/b/actions/artifacts/7/zip", replicaIndex: 2 }),
    minimalLog({ requestId: rid("c"), endTime: t0 + 300n, status: 401, host: "dl.forge.example", resource: "/api/v1/repos/a/b/actions/artifacts/7/zip/raw", line: [line(3)] }),
    minimalLog({ requestId: rid("d"), endTime: t0 + 400n, status: 403, moduleId: "git", versionId: "v2", resource: "/api/v1/user/starred/a/b", line: [line(4), line(0)] }),
    minimalLog({ requestId: rid("e"), endTime: t0 + 500n, status: 404, versionId: "v2", resource: "/api/v1/admin/hooks/99" }),
    minimalLog({ requestId: rid("f"), finished: false, resource: "/api/v1/repos/a/b/branches" }),
    minimalLog({ appId: "other", requestId: rid("x"), endTime: t0 + 600n }),
  );
}

describe("Read", () => {
  it("returns finished requests newest first, each with an offset, and every required field", async () => {
    await seed();
    const r = await read();
    expect(ids(r)).toEqual(["e", "d", "c", "b", "a"]);
    expect(r.log.every((l) => l.offset !== undefined && l.offset.requestId.length > 0)).toBe(true);
    expect(r.log.every((l) => l.line.length === 0)).toBe(true);
    expect(isFieldSet(r, LogReadResponseSchema.field.offset)).toBe(false);
    expect(r.lastEndTime).toBe(t0 + 100n);
  });

  it.each<[string, ReadInit, string[]]>([
    ["include_incomplete", { includeIncomplete: true }, ["f", "e", "d", "c", "b", "a"]],
    ["start_time inclusive", { startTime: t0 + 300n }, ["e", "d", "c"]],
    ["end_time exclusive", { endTime: t0 + 300n }, ["b", "a"]],
    ["a time window", { startTime: t0 + 200n, endTime: t0 + 400n }, ["c", "b"]],
    ["version_id (module default)", { versionId: ["v2"] }, ["e"]],
    ["module_version pairs ORed", { moduleVersion: [create(LogModuleVersionSchema, { moduleId: "git", versionId: "v2" }), create(LogModuleVersionSchema, { versionId: "v2" })] }, ["e", "d"]],
    ["module_version without a version: the whole module", { moduleVersion: [create(LogModuleVersionSchema, { moduleId: "git" })] }, ["d"]],
    ["an unknown version", { versionId: ["nope"] }, []],
    ["minimum_log_level", { minimumLogLevel: 3 }, ["d", "c"]],
    ["minimum_log_level 0 needs some app line", { minimumLogLevel: 0 }, ["d", "c", "a"]],
    ["combined_log_regex (partial match)", { combinedLogRegex: '" 40[13] ' }, ["d", "c"]],
    ["host_regex", { hostRegex: "^dl\\." }, ["c"]],
    ["replica_index", { replicaIndex: 2 }, ["b"]],
    ["replica_index -1 matches the default", { replicaIndex: -1 }, ["e", "d", "c", "a"]],
    ["request_id in the order given, once each, existing only", { requestId: [rid("c"), rid("zz"), rid("a"), rid("c")] }, ["c", "a"]],
    ["request_id with a regex", { requestId: [rid("c"), rid("d"), rid("a")], combinedLogRegex: '" 40[13] ' }, ["c", "d"]],
    ["request_id with include_incomplete", { requestId: [rid("f")], includeIncomplete: true }, ["f"]],
    ["request_id of an in-progress request without include_incomplete", { requestId: [rid("f")] }, []],
    ["count", { count: 2n }, ["e", "d"]],
    ["cache_iterator and num_shards change nothing", { cacheIterator: true, numShards: 4 }, ["e", "d", "c", "b", "a"]],
  ])("filters by %s", async (_name, init, expected) => {
    await seed();
    expect(ids(await read(init))).toEqual(expected);
  });

  it("another app's records never show", async () => {
    await seed();
    const r = await read({ appId: "other" });
    expect(ids(r)).toEqual(["x"]);
    expect(ids(await read({ appId: "nobody" }))).toEqual([]);
  });

  it("attaches app lines in time order, the last N with lines_incomplete", async () => {
    const lines = [3n, 1n, 2n].map((d) => create(LogLineSchema, { time: t0 + d, level: 1, logMessage: `at ${d}` }));
    await write(minimalLog({ requestId: rid("a"), endTime: t0 + 10n, line: lines }));
    const all = await read({ includeAppLogs: true });
    expect(all.log[0]!.line.map((l) => l.logMessage)).toEqual(["at 1", "at 2", "at 3"]);
    expect(isFieldSet(all.log[0]!, RequestLogSchema.field.linesIncomplete)).toBe(false);
    const last2 = await read({ includeAppLogs: true, appLogsPerRequest: 2 });
    expect(last2.log[0]!.line.map((l) => l.logMessage)).toEqual(["at 2", "at 3"]);
    expect(last2.log[0]!.linesIncomplete).toBe(true);
  });

  it("adds the host and the extra fields to combined with include_host and include_all", async () => {
    await write(
      minimalLog({
        requestId: rid("a"),
        endTime: t0 + 12_345n,
        ip: "192.0.2.1",
        host: "forge.example",
        mcycles: 2400n,
        cost: 0.00012,
        wasLoadingRequest: true,
        cloneKey: new Uint8Array([0xab, 0x01]),
        taskQueueName: "mirror-sync",
        taskName: "t-9",
      }),
    );
    const base = '192.0.2.1 - - [18/Nov/2026:11:06:40 +0000] "GET /api/v1/repos/alice/app" 0 0 "-" "-"';
    expect((await read()).log[0]!.combined).toBe(base);
    expect((await read({ includeHost: true })).log[0]!.combined).toBe(`${base} "forge.example"`);
    expect((await read({ includeAll: true })).log[0]!.combined).toBe(
      `${base} "forge.example" ms=12 cpu_ms=2000 cpm_usd=0.000120 loading_request=1 instance=ab01 queue_name=mirror-sync task_name=t-9`,
    );
  });

  it.each<[string, ReadInit, string]>([
    ["count 0", { count: 0n }, "count is 0: it must be 1 to 1000 (default 20)"],
    ["count 1001", { count: 1001n }, "count is 1001: it must be 1 to 1000 (default 20)"],
    ["version_id with module_version", { versionId: ["v1"], moduleVersion: [create(LogModuleVersionSchema, { versionId: "v1" })] }, "give version_id or module_version, not both (version_id is the deprecated form)"],
    ["request_id with start_time", { requestId: [rid("a")], startTime: t0 }, "request_id cannot be combined with start_time, end_time or offset"],
    ["request_id with an offset", { requestId: [rid("a")], offset: create(LogOffsetSchema, { requestId: rid("x") }) }, "request_id cannot be combined with start_time, end_time or offset"],
    ["minimum_log_level 5", { minimumLogLevel: 5 }, "minimum_log_level is 5: levels are 0 (DEBUG) to 4 (CRITICAL)"],
    ["negative num_shards", { numShards: -1 }, "num_shards is -1: it must not be negative"],
    ["start after end", { startTime: t0 + 2n, endTime: t0 + 1n }, `start_time (${t0 + 2n}) is after end_time (${t0 + 1n})`],
    ["an invalid regex", { combinedLogRegex: "a(b" }, "combined_log_regex is not a valid RE2 pattern: missing ): a(b"],
    ["a regex RE2 does not support", { hostRegex: "(a)\\1" }, "host_regex is not a valid RE2 pattern: invalid escape sequence: \\1"],
    ["an over-long regex", { hostRegex: "a".repeat(1025) }, "host_regex length in bytes is 1025, over the limit max-regex-bytes=1024"],
    [
      // RE2 took 390-500 ms of the calling thread to compile it, and held ~4.7 MB for good.
      "a regex whose compiled program would be huge, before it is compiled",
      { combinedLogRegex: "(?i)(\\pL|\\pN|\\pP){190}N" },
      "combined_log_regex's compile cost is 570572, over the limit max-regex-cost=10000: each character counts 1, a class 4, a Unicode class such as \\pL 1000, and repetitions are counted out (x{100} is 100 x's)",
    ],
    ["a malformed offset", { offset: create(LogOffsetSchema, { requestId: rid("garbage") }) }, "offset is malformed: pass back an offset exactly as a Read returned it"],
    ["no app_id", { appId: undefined }, "required field not set: app_id"],
  ])("refuses %s with INVALID_ARGUMENT", async (_name, init, message) => {
    // An init field left undefined (app_id) is not sent at all.
    const err = await callError(read(init));
    expect(err).toEqual({ code: Code.INVALID_ARGUMENT, details: message, reason: "INVALID_REQUEST" });
  });

  it("refuses a tampered offset and another app's offset", async () => {
    await seed();
    const page = await read({ count: 1n });
    const offset = page.offset!.requestId;
    const tampered = offset.slice();
    tampered[5] = tampered[5]! ^ 0x01;
    const message = "offset is not valid for this app (altered, or from another app or database)";
    for (const [appId, bytes] of [["forge", tampered], ["other", offset]] as const) {
      const err = await callError(read({ appId, offset: { requestId: bytes } }));
      expect(err).toEqual({ code: Code.INVALID_ARGUMENT, details: message, reason: "INVALID_REQUEST" });
    }
  });
});

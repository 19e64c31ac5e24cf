import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { status } from "@grpc/grpc-js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  LogLineSchema,
  type LogUsageRequest,
  LogUsageRequestSchema,
  type LogUsageResponse,
  WriteRequestSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { minimalLog, rid } from "../helpers/fixtures.js";
import { callError, unaryCall } from "../helpers/test-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let ts: TestServer;
beforeEach(async () => {
  ts = await startTestServer();
});
afterEach(async () => {
  await ts.close();
});

const hour = 3600;
const h0 = 1_795_003_200; // 2026-11-18T12:00:00Z, a whole hour
const usec = (seconds: number) => BigInt(seconds) * 1_000_000n;

type UsageInit = Omit<Exclude<MessageInitShape<typeof LogUsageRequestSchema>, LogUsageRequest>, "$typeName">;
const usage = (init: UsageInit = {}) =>
  unaryCall<LogUsageResponse>(ts.client, "usage", create(LogUsageRequestSchema, { appId: "forge", ...init }));

const rows = (r: LogUsageResponse) =>
  r.usage.map((u) => [u.versionId, u.startTime - h0, u.endTime - h0, Number(u.count), u.records]);

async function seed() {
  const line = create(LogLineSchema, { time: usec(h0), level: 1, logMessage: "x" });
  await unaryCall(ts.client, "write", create(WriteRequestSchema, {
    log: [
      // Ends exactly at h0 + 1 h: counts in the hour that starts then.
      minimalLog({ requestId: rid("a"), versionId: "v1", startTime: usec(h0 + hour) - 10n, endTime: usec(h0 + hour), line: [line, line] }),
      minimalLog({ requestId: rid("b"), versionId: "v1", startTime: usec(h0 + 10), endTime: usec(h0 + 20) }),
      minimalLog({ requestId: rid("c"), versionId: "v2", startTime: usec(h0 + 30), endTime: usec(h0 + 40), line: [line] }),
      minimalLog({ requestId: rid("d"), versionId: "v2", startTime: usec(h0 + 3 * hour), endTime: usec(h0 + 3 * hour + 5) }),
      minimalLog({ appId: "other", requestId: rid("x"), versionId: "v9", startTime: usec(h0), endTime: usec(h0 + 1) }),
    ],
  }));
}

describe("Usage", () => {
  it("counts requests and lines per hour and version, by time then version", async () => {
    await seed();
    const r = await usage();
    expect(rows(r)).toEqual([
      ["v1", 0, hour, 1, 0],
      ["v2", 0, hour, 1, 1],
      ["v1", hour, 2 * hour, 1, 2],
      ["v2", 3 * hour, 4 * hour, 1, 0],
    ]);
    expect(Number(r.summary!.count)).toBe(4);
    expect(r.summary!.records).toBe(3);
    expect(r.summary!.startTime).toBe(h0);
    expect(r.summary!.endTime).toBe(h0 + 4 * hour);
    expect(r.summary!.totalSize).toBe(r.usage.reduce((s, u) => s + u.totalSize, 0n));
  });

  it.each<[string, UsageInit, unknown[][]]>([
    ["resolution 0: one bucket", { resolutionHours: 0 }, [["v1", 0, 4 * hour, 2, 2], ["v2", 0, 4 * hour, 2, 1]]],
    ["resolution 2", { resolutionHours: 2 }, [["v1", 0, 2 * hour, 2, 2], ["v2", 0, 2 * hour, 1, 1], ["v2", 2 * hour, 4 * hour, 1, 0]]],
    ["combine_versions", { combineVersions: true, resolutionHours: 2 }, [["", 0, 2 * hour, 3, 3], ["", 2 * hour, 4 * hour, 1, 0]]],
    ["a version filter", { versionId: ["v2"] }, [["v2", 0, hour, 1, 1], ["v2", 3 * hour, 4 * hour, 1, 0]]],
    ["start rounds down, end rounds up", { startTime: h0 + hour + 5, endTime: h0 + hour + 6 }, [["v1", hour, 2 * hour, 1, 2]]],
    ["end is exclusive", { startTime: h0, endTime: h0 + hour }, [["v1", 0, hour, 1, 0], ["v2", 0, hour, 1, 1]]],
    ["a range with nothing", { startTime: h0 + 10 * hour, endTime: h0 + 11 * hour }, []],
    ["the last bucket cut at end", { startTime: h0, endTime: h0 + 3 * hour, resolutionHours: 2 }, [["v1", 0, 2 * hour, 2, 2], ["v2", 0, 2 * hour, 1, 1]]],
  ])("honours %s", async (_name, init, expected) => {
    await seed();
    expect(rows(await usage(init))).toEqual(expected);
  });

  it("lists only the versions with versions_only", async () => {
    await seed();
    const r = await usage({ versionsOnly: true });
    expect(r.usage.map((u) => u.versionId)).toEqual(["v1", "v2"]);
    expect(r.usage.every((u) => u.count === 0n && u.startTime === 0)).toBe(true);
  });

  it("moves a request's counts when it moves hours (in progress, then finished)", async () => {
    ts.setNow(usec(h0 + 5 * hour));
    await unaryCall(ts.client, "write", create(WriteRequestSchema, { log: [minimalLog({ requestId: rid("p"), startTime: usec(h0), finished: false })] }));
    expect(rows(await usage())).toEqual([["v1", 5 * hour, 6 * hour, 1, 0]]);
    await unaryCall(ts.client, "write", create(WriteRequestSchema, { log: [minimalLog({ requestId: rid("p"), startTime: usec(h0), endTime: usec(h0 + 60) })] }));
    expect(rows(await usage())).toEqual([["v1", 0, hour, 1, 0]]);
  });

  it.each<[string, UsageInit, string]>([
    ["usage_version 2", { usageVersion: 2 }, "usage_version is 2: only 1 is known (or leave it unset)"],
    ["start after end", { startTime: h0 + 10, endTime: h0 }, `start_time (${h0 + 10}) is after end_time (${h0})`],
    ["too many buckets", { startTime: 0, endTime: 2_000_000_000, resolutionHours: 1 }, "the range holds 555556 buckets of 1 h: at most 100000 (raise resolution_hours)"],
    ["a negative start", { startTime: -5 }, "start_time is negative (-5)"],
  ])("refuses %s", async (_name, init, message) => {
    const err = await callError(usage(init));
    expect(err).toEqual({ code: status.INVALID_ARGUMENT, details: message, reason: "INVALID_REQUEST" });
  });

  it("ends a range at the last hour an int32 of seconds holds (found by fuzzing)", async () => {
    await seed();
    const r = await usage({ startTime: h0, endTime: 2_147_483_647, resolutionHours: 0 });
    expect(rows(r)).toEqual([
      ["v1", 0, 2_147_482_800 - h0, 2, 2],
      ["v2", 0, 2_147_482_800 - h0, 2, 1],
    ]);
  });

  it("answers an app with no data with an empty list and a zero summary", async () => {
    const r = await usage({ appId: "nobody" });
    expect(r.usage).toEqual([]);
    expect(Number(r.summary!.count)).toBe(0);
  });
});

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  LogLineSchema,
  type LogUsageRequest,
  type LogUsageRequestSchema,
  type LogUsageResponse,
  type RequestLog,
  RequestLogSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { Code } from "../../src/reqlog-error.js";
import { minimalLog, rid } from "../helpers/fixtures.js";
import { callError } from "../helpers/test-client.js";
import { startTestServer, type TestServer, useTestServer } from "../helpers/test-server.js";

const hour = 3600;
const h0 = 1_795_003_200; // 2026-11-18T12:00:00Z, a whole hour
const usec = (seconds: number) => BigInt(seconds) * 1_000_000n;

type UsageInit = Omit<Exclude<MessageInitShape<typeof LogUsageRequestSchema>, LogUsageRequest>, "$typeName">;
const usageOf = (ts: TestServer) => (init: UsageInit = {}) => ts.client.usage({ appId: "forge", ...init });

const rows = (r: LogUsageResponse) =>
  r.usage.map((u) => [u.versionId, u.startTime - h0, u.endTime - h0, Number(u.count), u.records]);

describe("Usage", () => {
  const ts = useTestServer();
  const usage = usageOf(ts);

  async function seed() {
    const line = create(LogLineSchema, { time: usec(h0), level: 1, logMessage: "x" });
    await ts.write(
      // Ends exactly at h0 + 1 h: counts in the hour that starts then.
      minimalLog({ requestId: rid("a"), versionId: "v1", startTime: usec(h0 + hour) - 10n, endTime: usec(h0 + hour), line: [line, line] }),
      minimalLog({ requestId: rid("b"), versionId: "v1", startTime: usec(h0 + 10), endTime: usec(h0 + 20) }),
      minimalLog({ requestId: rid("c"), versionId: "v2", startTime: usec(h0 + 30), endTime: usec(h0 + 40), line: [line] }),
      minimalLog({ requestId: rid("d"), versionId: "v2", startTime: usec(h0 + 3 * hour), endTime: usec(h0 + 3 * hour + 5) }),
      minimalLog({ appId: "other", requestId: rid("x"), versionId: "v9", startTime: usec(h0), endTime: usec(h0 + 1) }),
    );
  }

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
    await ts.write(minimalLog({ requestId: rid("p"), startTime: usec(h0), finished: false }));
    expect(rows(await usage())).toEqual([["v1", 5 * hour, 6 * hour, 1, 0]]);
    await ts.write(minimalLog({ requestId: rid("p"), startTime: usec(h0), endTime: usec(h0 + 60) }));
    expect(rows(await usage())).toEqual([["v1", 0, hour, 1, 0]]);
  });

  it.each<[string, UsageInit, string]>([
    ["usage_version 2", { usageVersion: 2 }, "usage_version is 2: only 1 is known (or leave it unset)"],
    ["start after end", { startTime: h0 + 10, endTime: h0 }, `start_time (${h0 + 10}) is after end_time (${h0})`],
    ["a negative start", { startTime: -5 }, "start_time is negative (-5)"],
  ])("refuses %s", async (_name, init, message) => {
    const err = await callError(usage(init));
    expect(err).toEqual({ code: Code.INVALID_ARGUMENT, details: message, reason: "INVALID_REQUEST" });
  });

  it("refuses a range of more time buckets than max-usage-records before reading anything", async () => {
    const err = await callError(usage({ startTime: 0, endTime: 2_000_000_000, resolutionHours: 1 }));
    expect(err).toEqual({
      code: Code.RESOURCE_EXHAUSTED,
      details:
        "number of Usage records (time buckets × versions) is 555556, over the limit max-usage-records=100000: " +
        "narrow the range, raise resolution_hours or combine versions",
      reason: "INVALID_REQUEST",
    });
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

/**
 * 70,000 hours of two versions, a request in every hour of each: 140,000
 * usage records at a resolution of one hour, more than the 100,000 that
 * max-usage-records allows by default (and more than Math.min(...spread)
 * takes: the summary once threw a RangeError there and answered INTERNAL).
 */
describe("Usage of 140,000 records", () => {
  const hours = 70_000;
  // Eight years up to h0: a writer may not give times more than a day ahead of the server's clock.
  const from = h0 - hours * hour;
  const versions = ["v1", "v2"];
  const closed = { startTime: from, endTime: from + hours * hour, resolutionHours: 1 };
  const tooLarge = {
    code: Code.RESOURCE_EXHAUSTED,
    details:
      "number of Usage records (time buckets × versions) is more than 100000, over the limit max-usage-records=100000: " +
      "narrow the range, raise resolution_hours or combine versions",
    reason: "INVALID_REQUEST",
  };
  // Same-width ids and times: every record is stored at the same size.
  const requestId = (version: string, h: number) => rid(`${version}-${String(h).padStart(5, "0")}`);
  const recordAt = (version: string, h: number): RequestLog =>
    minimalLog({ requestId: requestId(version, h), versionId: version, startTime: usec(from + h * hour), endTime: usec(from + h * hour + 1) });

  const folder = mkdtempSync(join(tmpdir(), "reqlog-usage-"));
  const dbPath = join(folder, "reqlog.db");
  /** Bytes of one stored record, as Usage counts them. */
  let recordBytes = 0;

  beforeAll(async () => {
    const seeding = await startTestServer({ dbPath });
    try {
      for (const version of versions) {
        for (let h = 0; h < hours; h += 1000) {
          await seeding.write(...Array.from({ length: Math.min(1000, hours - h) }, (_, i) => recordAt(version, h + i)));
        }
      }
      const sizes = (await seeding.stored(...versions.flatMap((v) => [requestId(v, 0), requestId(v, hours - 1)]))).map(
        (log) => toBinary(RequestLogSchema, log).length,
      );
      expect(new Set(sizes).size).toBe(1);
      recordBytes = sizes[0]!;
    } finally {
      await seeding.close();
    }
  }, 120_000);
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  describe("with the default limits", () => {
    const ts = useTestServer({ dbPath });
    const usage = usageOf(ts);

    it("refuses a closed range with RESOURCE_EXHAUSTED naming max-usage-records, not INTERNAL", async () => {
      expect(await callError(usage(closed))).toEqual(tooLarge);
    });

    it.each<[string, UsageInit]>([
      ["no start or end", { resolutionHours: 1 }],
      ["a start only", { startTime: from, resolutionHours: 1 }],
      ["an end only", { endTime: from + hours * hour, resolutionHours: 1 }],
    ])("refuses an open range (%s) the same way", async (_name, init) => {
      expect(await callError(usage(init))).toEqual(tooLarge);
    });
  });

  describe("with max-usage-records raised to 200,000", () => {
    const ts = useTestServer({ dbPath, limits: { maxUsageRecords: 200_000 } });
    const usage = usageOf(ts);

    it("answers every record, and a summary of all that was written", async () => {
      const r = await usage(closed);
      expect(r.usage).toHaveLength(hours * versions.length);
      for (const version of versions) {
        const own = r.usage.filter((u) => u.versionId === version);
        expect(own).toHaveLength(hours);
        expect(own.reduce((s, u) => s + u.count, 0n)).toBe(BigInt(hours));
        expect(own.reduce((s, u) => s + u.totalSize, 0n)).toBe(BigInt(hours * recordBytes));
      }
      expect(r.usage[0]).toMatchObject({ versionId: "v1", startTime: from, endTime: from + hour, count: 1n });
      expect(r.usage.at(-1)).toMatchObject({ versionId: "v2", startTime: from + (hours - 1) * hour, endTime: from + hours * hour, count: 1n });
      expect(r.summary).toMatchObject({
        startTime: from,
        endTime: from + hours * hour,
        count: BigInt(hours * versions.length),
        totalSize: BigInt(hours * versions.length * recordBytes),
        records: 0,
      });
    });
  });
});

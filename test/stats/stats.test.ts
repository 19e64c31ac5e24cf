import { isFieldSet } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { type StatsFigures, StatsResponseSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { latencyBucket } from "../../src/domain/latency-histogram.js";
import { Code } from "../../src/reqlog-error.js";
import { minimalLog, rid } from "../helpers/fixtures.js";
import { callError } from "../helpers/test-client.js";
import { useTestServer } from "../helpers/test-server.js";

const ts = useTestServer();
/** 2026-11-18T12:00:00Z, a whole hour, in µs. */
const h0 = 1_795_003_200n * 1_000_000n;
const s0 = h0 / 1_000_000n;

/** A finished request of app forge ending in the hour from h0: id, resource, status, latency (µs), other fields. */
const request = (id: string, resource: string, status: number, latency: number, more: Parameters<typeof minimalLog>[0] = {}) =>
  minimalLog({
    requestId: rid(id), startTime: h0, endTime: h0 + BigInt(latency), latency: BigInt(latency), resource, status,
    responseSize: 1000n, ip: "192.0.2.1", userAgent: "git/2.43.0", ...more,
  });

/** Figures as compared: requests, errors, bytes, then the latencies' histogram buckets (p50, p90, p99, max). */
const figures = (f: StatsFigures | undefined) => [
  Number(f!.requests), Number(f!.errors), Number(f!.bytesSent),
  ...[f!.latencyP50, f!.latencyP90, f!.latencyP99, f!.latencyMax].map((l) => latencyBucket(Number(l))),
];
const buckets = (...latencies: number[]) => latencies.map(latencyBucket);

describe("Stats", () => {
  it("answers per route and status class with latency percentiles, the total and the top lists", async () => {
    // 100 clones taking 1 ms … 100 ms; 10 artifact downloads of 5 ms, 2 of them failing; 5 crawler requests.
    await ts.write(
      ...Array.from({ length: 100 }, (_, i) =>
        request(`clone${i}`, `/api/v1/repos/alice/app${i}.git/info/refs?service=git-upload-pack`, 200, (i + 1) * 1000, { urlMapEntry: "/{owner}/{repo}.git/info/refs" }),
      ),
      ...Array.from({ length: 10 }, (_, i) =>
        request(`zip${i}`, `/api/v1/repos/alice/app/actions/artifacts/${i + 1}/zip/raw?sig=x`, i < 2 ? 502 : 200, 5000, { ip: "192.0.2.9", responseSize: 10_000n }),
      ),
      ...Array.from({ length: 5 }, (_, i) =>
        request(`bot${i}`, `/api/v1/teams/${i}`, 404, 300_000, { userAgent: "Mozilla/5.0 (compatible; Googlebot/2.1)", ip: "66.249.66.1" }),
      ),
    );
    const reply = await ts.client.stats({ appId: "forge", topN: 2 });
    expect(reply.record.map((r) => [Number(r.startTime - s0), Number(r.endTime - s0), r.route, r.statusClass, ...figures(r.figures)])).toEqual([
      [0, 3600, "/api/v1/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/zip/raw", 2, 8, 0, 80_000, ...buckets(5000, 5000, 5000, 5000)],
      [0, 3600, "/api/v1/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/zip/raw", 5, 2, 2, 20_000, ...buckets(5000, 5000, 5000, 5000)],
      [0, 3600, "/api/v1/teams/{id}", 4, 5, 0, 5000, ...buckets(300_000, 300_000, 300_000, 300_000)],
      [0, 3600, "/{owner}/{repo}.git/info/refs", 2, 100, 0, 100_000, ...buckets(50_000, 90_000, 99_000, 100_000)],
    ]);
    expect(reply.record[3]!.figures!.latencyMax).toBe(100_000n);
    expect(figures(reply.total)).toEqual([115, 2, 205_000, ...buckets(49_000, 100_000, 300_000, 300_000)]);
    expect([reply.startTime, reply.endTime]).toEqual([s0, s0 + 3600n]);
    expect(reply.topRouteByRequests.map((r) => [r.route, Number(r.figures!.requests)])).toEqual([
      ["/{owner}/{repo}.git/info/refs", 100],
      ["/api/v1/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/zip/raw", 10],
    ]);
    expect(reply.topRouteByP99.map((r) => r.route)).toEqual(["/api/v1/teams/{id}", "/{owner}/{repo}.git/info/refs"]);
    expect(reply.topClientIp.map((c) => [c.name, c.requests, c.errors])).toEqual([["192.0.2.1", 100n, 0n], ["192.0.2.9", 10n, 2n]]);
    expect(reply.topUserAgent.map((c) => [c.name, c.requests])).toEqual([["git/2.43.0", 110n], ["Mozilla/5.0 (compatible; Googlebot/2.1)", 5n]]);

    const human = await ts.client.stats({ appId: "forge", resolutionHours: 0, excludeUserAgentRegex: "(?i)bot|crawler|spider", statusClass: [2, 4, 5] });
    expect(human.record.map((r) => [r.route, r.statusClass])).toEqual([
      ["/api/v1/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/zip/raw", 2],
      ["/api/v1/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/zip/raw", 5],
      ["/{owner}/{repo}.git/info/refs", 2],
    ]);
    expect(human.topUserAgent.map((c) => c.name)).toEqual(["git/2.43.0"]);
    expect(human.topRouteByP99[0]!.route).toBe("/{owner}/{repo}.git/info/refs");
  });

  it("gives versions when asked, and an empty answer with zero totals for an app with no stats", async () => {
    await ts.write(request("a", "/a", 200, 10, { moduleId: "web", versionId: "v7" }));
    const reply = await ts.client.stats({ appId: "forge", perVersion: true });
    expect(reply.record.map((r) => [r.route, r.moduleId, r.versionId])).toEqual([["/a", "web", "v7"]]);
    const none = await ts.client.stats({ appId: "nobody", topN: 0 });
    expect(none.record).toEqual([]);
    expect(figures(none.total)).toEqual([0, 0, 0, 0, 0, 0, 0]);
    expect(isFieldSet(none, StatsResponseSchema.field.startTime)).toBe(false);
  });

  it.each([
    ["an invalid bot pattern, with RE2's message", { excludeUserAgentRegex: "(bot" }, /^exclude_user_agent_regex is not a valid RE2 pattern: .*missing \)/],
    ["an over-long bot pattern", { excludeUserAgentRegex: "x".repeat(1025) }, /^exclude_user_agent_regex length in bytes is 1025, over the limit max-regex-bytes=1024$/],
    ["a status class that is none", { statusClass: [2, 6] }, /^status_class 6 is not a class: 1 to 5 for 1xx to 5xx, 0 for other statuses$/],
    ["a start after the end", { startTime: s0 + 10n, endTime: s0 }, /^start_time \(\d+\) is after end_time \(\d+\)$/],
    ["a negative start", { startTime: -1n }, /^start_time is negative \(-1\)$/],
    ["a top list over 1000", { topN: 1001 }, /^top_n is 1001: at most 1000$/],
  ])("rejects %s with INVALID_ARGUMENT naming the field", async (_, init, message) => {
    const err = await callError(ts.client.stats({ appId: "forge", ...init }));
    expect(err.code).toBe(Code.INVALID_ARGUMENT);
    expect(err.reason).toBe("INVALID_REQUEST");
    expect(err.details).toMatch(message);
  });

  it("rejects a missing app_id and a range of more buckets than max-stats-records before reading anything", async () => {
    expect((await callError(ts.client.stats({}))).details).toBe("required field not set: app_id");
    const err = await callError(ts.client.stats({ appId: "forge", startTime: 0n, endTime: s0 }));
    expect(err.code).toBe(Code.RESOURCE_EXHAUSTED);
    expect(err.details).toMatch(/^number of Stats records \(time buckets × routes × status classes × versions\) is \d+, over the limit max-stats-records=100000: /);
  });
});

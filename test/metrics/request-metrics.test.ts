import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { createMetrics } from "../../src/metrics/metrics.js";
import { createRequestMetrics, durationBoundsSeconds } from "../../src/metrics/request-metrics.js";
import type { FinishedRequest } from "../../src/store/store.js";
import { statsFactsOf } from "../../src/write/stats-facts.js";
import { minimalLog } from "../helpers/fixtures.js";
import { withDebianPackage } from "../helpers/local-process.js";

function finished(init: Parameters<typeof minimalLog>[0] = {}): FinishedRequest {
  const log = minimalLog({ status: 200, responseSize: 512n, latency: 20_000n, ...init });
  return { log, facts: statsFactsOf(log), maxLevel: -1 };
}

/** The value of the sample of `name` whose labels are written `labels` (undefined: no such sample). */
function sample(text: string, name: string, labels: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${name}{${labels}} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

const forge = 'app="forge",module="default",version="v1"';
const hooks = `${forge},http_route="/api/v1/admin/hooks",http_request_method="GET",http_response_status_code="200"`;

describe("request metrics", () => {
  it("counts a request in the duration bucket of its latency, an observation on a bound in that bound's bucket", () => {
    const metrics = createRequestMetrics({ maxSeriesPerApp: 100, overflowed() {} });
    metrics.count([
      finished({ resource: "/api/v1/admin/hooks", latency: 5_000n }),
      finished({ resource: "/api/v1/admin/hooks", latency: 5_001n }),
      finished({ resource: "/api/v1/admin/hooks", latency: 11_000_000n }),
    ]);
    const text = metrics.text();
    const bucket = (le: string) => sample(text, "http_server_request_duration_seconds_bucket", `${hooks},le="${le}"`);
    expect(bucket("0.005")).toBe(1);
    expect(bucket("0.01")).toBe(2);
    expect(bucket("10")).toBe(2);
    expect(bucket("+Inf")).toBe(3);
    expect(sample(text, "http_server_request_duration_seconds_count", hooks)).toBe(3);
    expect(sample(text, "http_server_request_duration_seconds_sum", hooks)).toBeCloseTo(11.010001, 6);
    expect(sample(text, "http_server_response_body_size_bytes_sum", hooks)).toBe(1536);
    expect(sample(text, "http_server_response_body_size_bytes_bucket", `${hooks},le="1000"`)).toBe(3);
    // OpenTelemetry's advised bounds, each a bucket, then +Inf.
    const les = text
      .split("\n")
      .filter((l) => l.startsWith("http_server_request_duration_seconds_bucket{"))
      .map((l) => /,le="([^"]+)"/.exec(l)![1]);
    expect(les).toEqual([...durationBoundsSeconds.map(String), "+Inf"]);
  });

  it("labels a request by its Stats route, OpenTelemetry's known methods (else _OTHER) and its status", () => {
    const metrics = createRequestMetrics({ maxSeriesPerApp: 100, overflowed() {} });
    metrics.count([
      finished({ resource: "/api/v1/teams/42?x=1", method: "BREW", status: 418 }),
      finished({ resource: "/anything", urlMapEntry: "/repos/{owner}", method: "DELETE", status: 204 }),
    ]);
    const text = metrics.text();
    expect(sample(text, "http_server_request_duration_seconds_count", `${forge},http_route="/api/v1/teams/{id}",http_request_method="_OTHER",http_response_status_code="418"`)).toBe(1);
    expect(sample(text, "http_server_request_duration_seconds_count", `${forge},http_route="/repos/{owner}",http_request_method="DELETE",http_response_status_code="204"`)).toBe(1);
  });

  it("escapes quotes, backslashes and line feeds in label values", () => {
    const metrics = createRequestMetrics({ maxSeriesPerApp: 100, overflowed() {} });
    metrics.count([finished({ urlMapEntry: 'a"b\\c\nd' })]);
    expect(metrics.text()).toContain('http_route="a\\"b\\\\c\\nd"');
  });

  it("keeps an app's first series, counts the rest under http_route=\"other\" and tells of each request that overflowed", () => {
    const overflowed: string[] = [];
    const metrics = createRequestMetrics({ maxSeriesPerApp: 3, overflowed: (app) => overflowed.push(app) });
    for (let i = 0; i < 10; i++) metrics.count([finished({ urlMapEntry: `/r${i}` }), finished({ urlMapEntry: `/r${i}` })]);
    metrics.count([finished({ appId: "ci", urlMapEntry: "/r9" })]);
    const text = metrics.text();
    const count = (app: string, route: string) =>
      sample(text, "http_server_request_duration_seconds_count", `app="${app}",module="default",version="v1",http_route="${route}",http_request_method="GET",http_response_status_code="200"`);
    expect([count("forge", "/r0"), count("forge", "/r1"), count("forge", "/r2"), count("forge", "/r3")]).toEqual([2, 2, 2, undefined]);
    expect(count("forge", "other")).toBe(14);
    expect(count("ci", "/r9")).toBe(1);
    expect(overflowed).toEqual(Array(14).fill("forge"));
    expect(metrics.seriesByApp()).toEqual([["forge", 3], ["ci", 1]]);
  });

  it("counts only the apps asked for, less those skipped", () => {
    const metrics = createRequestMetrics({ maxSeriesPerApp: 100, apps: ["forge", "ci"], skipApps: ["ci"], overflowed() {} });
    metrics.count([finished(), finished({ appId: "ci" }), finished({ appId: "docs" })]);
    expect(metrics.seriesByApp()).toEqual([["forge", 1]]);
  });

  it("writes text that promtool check metrics accepts", () => {
    const metrics = createRequestMetrics({ maxSeriesPerApp: 100, overflowed() {} });
    metrics.count([finished(), finished({ urlMapEntry: 'x"y', status: 503, latency: 3_000_000n })]);
    const promtool = withDebianPackage("prometheus", () => (spawnSync("promtool", ["--version"]).status === 0 ? "promtool" : undefined));
    const check = spawnSync(promtool, ["check", "metrics"], { input: metrics.text(), encoding: "utf8" });
    expect(check.stderr + check.stdout).toBe("");
    expect(check.status).toBe(0);
  });
});

describe("the metrics of a server (createMetrics)", () => {
  it("counts no request that ended longer than maxAge before it was stored, and counts it as late", async () => {
    const nowMs = 1_795_000_000_000;
    const metrics = createMetrics({ openTails: () => 0 }, { maxSeriesPerApp: 100, maxAgeMs: 3_600_000, now: () => nowMs });
    const ended = (msAgo: number) => finished({ startTime: BigInt(nowMs - msAgo) * 1000n, endTime: BigInt(nowMs - msAgo) * 1000n });
    metrics.writes!.finished([ended(1000), ended(3_599_000), ended(3_601_000), ended(86_400_000)]);
    const text = await metrics.scrape();
    expect(sample(text, "http_server_request_duration_seconds_count", `${forge},http_route="/api/v1/repos/{owner}/{repo}",http_request_method="GET",http_response_status_code="200"`)).toBe(2);
    expect(sample(text, "reqlog_metrics_late_total", 'app="forge",kind="requests"')).toBe(2);
  });
});

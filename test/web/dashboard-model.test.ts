import { create } from "@bufbuild/protobuf";
import RE2 from "re2";
import { describe, expect, it } from "vitest";
import {
  AlertSchema,
  AlertState,
  LogUsageRecordSchema,
  LogUsageResponseSchema,
  StatsBucketSchema,
  StatsFiguresSchema,
  StatsResponseSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { alertRequestsPatch, alertSpans } from "../../web/alert-periods.js";
import { formatBytes } from "../../web/format.js";
import { routeRegex } from "../../web/route-regex.js";
import { statsSeries, usageSeries } from "../../web/series.js";
import { bucketStarts, hourRange, pickResolution, rangeSeconds } from "../../web/time-range.js";
import { defaultState, formatState, parseState, type ViewState } from "../../web/view-state.js";

const h0 = 1_795_003_200; // 2026-11-18T12:00:00Z

describe("the dashboard's URL", () => {
  it("writes a state as a query string and reads the same state back", () => {
    const state: ViewState = {
      ...defaultState,
      view: "requests",
      app: "forge",
      module: "api",
      version: "v42",
      range: "custom",
      from: h0,
      to: h0 + 7200,
      regex: '"GET /api/v1/repos/[^ ]+ HTTP',
      host: "^dl\\.",
      level: 3,
      incomplete: true,
      offset: "AbC-_9",
      request: "cjE1",
      routesBy: "p99",
    };
    const query = formatState(state);
    expect(query).toContain("from=2026-11-18T12:00:00Z");
    expect(parseState(query)).toEqual(state);
  });

  it("leaves defaults out of the URL, and reads a bare URL as the defaults", () => {
    expect(formatState(defaultState)).toBe("");
    expect(formatState({ ...defaultState, app: "forge" })).toBe("?app=forge");
    expect(parseState("")).toEqual(defaultState);
  });

  it("ignores values it does not know instead of failing", () => {
    const state = parseState("?view=nope&range=99y&level=9&routes=x");
    expect(state).toEqual(defaultState);
  });
});

describe("the dashboard's time ranges", () => {
  it("rounds a range out to whole hours and keeps charts under a hundred buckets", () => {
    expect(hourRange(h0 + 100, h0 + 3 * 3600 - 5)).toEqual({ start: h0, end: h0 + 3 * 3600, resolutionHours: 1 });
    expect(pickResolution(24)).toBe(1);
    expect(pickResolution(168)).toBe(2);
    expect(pickResolution(720)).toBe(24);
    const month = hourRange(h0, h0 + 101 * 3600);
    expect(month.resolutionHours).toBe(2);
    expect(month.end).toBe(h0 + 102 * 3600); // whole buckets
    expect(bucketStarts(month)).toHaveLength(51);
  });

  it("ends the presets at the end of the current hour", () => {
    expect(rangeSeconds({ range: "24h" }, (h0 + 1800) * 1000)).toEqual({ start: h0 + 3600 - 86400, end: h0 + 3600 });
    expect(rangeSeconds({ range: "all" }, 0)).toEqual({});
  });
});

describe("the dashboard's series", () => {
  const range = { start: h0, end: h0 + 3 * 3600, resolutionHours: 1 };

  it("lays Usage records out on the buckets, zero where Usage has none, by version too", () => {
    const record = (versionId: string, hour: number, count: number) =>
      create(LogUsageRecordSchema, { versionId, startTime: h0 + hour * 3600, endTime: h0 + (hour + 1) * 3600, count: BigInt(count), totalSize: BigInt(count * 10), records: count * 2 });
    const series = usageSeries(range, create(LogUsageResponseSchema, { usage: [record("v1", 0, 3), record("v2", 0, 1), record("v2", 2, 5)] }));
    expect(series.requests).toEqual([4, 0, 5]);
    expect(series.totals).toEqual({ requests: 9, bytes: 90, lines: 18 });
    expect(series.byVersion).toEqual([
      { version: "v2", requests: [1, 0, 5] },
      { version: "v1", requests: [3, 0, 0] },
    ]);
  });

  it("takes each bucket's figures and status classes from the Stats answer's buckets, with gaps where a bucket has no requests", () => {
    const figures = (requests: number, p99: number) =>
      create(StatsFiguresSchema, { requests: BigInt(requests), errors: 1n, bytesSent: 100n, latencyP50: 10n, latencyP90: 20n, latencyP99: BigInt(p99), latencyMax: 999n });
    const bucket = (hour: number, requests: number, p99: number, classes: [number, number][]) => {
      const classRequests = [0n, 0n, 0n, 0n, 0n, 0n];
      for (const [c, n] of classes) classRequests[c] = BigInt(n);
      return create(StatsBucketSchema, { startTime: BigInt(h0 + hour * 3600), endTime: BigInt(h0 + (hour + 1) * 3600), figures: figures(requests, p99), classRequests });
    };
    // Bucket 1 has no requests (no bucket); one outside the range is left out.
    const answer = create(StatsResponseSchema, { bucket: [bucket(0, 5, 300, [[2, 4], [5, 1]]), bucket(2, 2, 50, [[2, 2]]), bucket(7, 9, 1, [[2, 9]])] });
    const series = statsSeries(range, answer);
    expect(series.requests).toEqual([5, 0, 2]);
    expect(series.p99).toEqual([300, null, 50]);
    expect(series.byClass[2]).toEqual([4, 0, 2]);
    expect(series.byClass[5]).toEqual([1, 0, 0]);
    expect(series.totals).toEqual({ requests: 7, errors: 2, bytesSent: 200 });
    expect(statsSeries(range, undefined).requests).toEqual([0, 0, 0]);
  });
});

describe("a route's search regex", () => {
  const line = (request: string) => `10.0.0.1 - - [18/Nov/2026:12:00:00 +0000] "${request}" 200 5 "-" "curl/8.5.0"`;

  it("matches the requests of the route and no others, as RE2 reads it", () => {
    const re = new RE2(routeRegex("/api/v1/repos/{owner}/{repo}/actions/artifacts/{id}/zip")!);
    expect(re.test(line("GET /api/v1/repos/alice/app/actions/artifacts/123/zip HTTP/1.1"))).toBe(true);
    expect(re.test(line("GET /api/v1/repos/alice/app/actions/artifacts/123/zip?x=1 HTTP/1.1"))).toBe(true);
    expect(re.test(line("GET /api/v1/repos/alice/app/actions/artifacts/123/zip/raw HTTP/1.1"))).toBe(false);
    expect(re.test(line("GET /api/v1/repos/alice/actions/artifacts/123/zip HTTP/1.1"))).toBe(false);
    // A record without an HTTP version: the path ends the request line.
    expect(re.test(line("GET /api/v1/repos/alice/app/actions/artifacts/123/zip"))).toBe(true);
    expect(re.test(line("GET /api/v1/repos/alice/app/actions/artifacts/123/zip/raw"))).toBe(false);
  });

  it("escapes what RE2 would read as syntax, and offers nothing for routes that are not paths", () => {
    expect(new RE2(routeRegex("/a.b/(x)")!).test(line("GET /a.b/(x) HTTP/1.1"))).toBe(true);
    expect(new RE2(routeRegex("/a.b/(x)")!).test(line("GET /aXb/(x) HTTP/1.1"))).toBe(false);
    expect(routeRegex("main-handler")).toBeUndefined();
  });
});

describe("the dashboard's byte figures", () => {
  it("keep fractions below a byte (axis ticks of a quiet hour) and three digits above, in powers of 1000", () => {
    expect([0, 0.25, 0.5, 0.75, 1, 153, 999].map(formatBytes)).toEqual(["0 B", "0.25 B", "0.5 B", "0.75 B", "1 B", "153 B", "999 B"]);
    expect([1000, 1234, 94_200, 8_140_000_000, 9_007_199_254_740_993n].map(formatBytes)).toEqual([
      "1 KB",
      "1.23 KB",
      "94.2 KB",
      "8.14 GB",
      "9.01 PB",
    ]);
  });
});

describe("the dashboard's alerts", () => {
  const firing = create(AlertSchema, { name: "RouteServerErrors", state: AlertState.FIRING, startTime: BigInt(h0), route: "/api/v1/teams/{id}", fingerprint: "a" });
  const resolved = create(AlertSchema, { name: "AppTrafficStopped", state: AlertState.RESOLVED, startTime: BigInt(h0), endTime: BigInt(h0 + 600), fingerprint: "b" });
  const now = h0 + 3600;

  it("links an alert to its route's requests from a minute before it started to a minute after it ended, or after now while it fires", () => {
    expect(alertRequestsPatch(firing, now)).toEqual({
      view: "requests",
      range: "custom",
      from: h0 - 60,
      to: now + 60,
      regex: routeRegex("/api/v1/teams/{id}"),
      offset: "",
      request: "",
    });
    // An alert about no route (an app's traffic) links to all the app's requests then.
    expect(alertRequestsPatch(resolved, now)).toMatchObject({ view: "requests", from: h0 - 60, to: h0 + 660, regex: "" });
    // As a URL: the Requests view of that period and route, as the page reads it back.
    const back = parseState(formatState({ ...defaultState, app: "forge", ...alertRequestsPatch(firing, now) }));
    expect(back).toMatchObject({ view: "requests", app: "forge", range: "custom", from: h0 - 60, to: now + 60, regex: routeRegex("/api/v1/teams/{id}") });
  });

  it("marks each alert's period on the charts: to its end once resolved, to now while it fires", () => {
    expect(alertSpans([firing, resolved], now)).toEqual([
      { from: h0, to: now, name: "RouteServerErrors" },
      { from: h0, to: h0 + 600, name: "AppTrafficStopped" },
    ]);
  });
});

import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createLogMetrics } from "../../src/metrics/log-metrics.js";
import { loadLogMetrics, parseLogMetrics } from "../../src/metrics/log-metrics-file.js";
import type { FinishedRequest } from "../../src/store/store.js";
import { formatCombined } from "../../src/format/combined-line.js";
import { statsFactsOf } from "../../src/write/stats-facts.js";
import { minimalLog } from "../helpers/fixtures.js";

const raw = "/api/v1/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/zip/raw";

function finished(init: Parameters<typeof minimalLog>[0] = {}, maxLevel = -1): FinishedRequest {
  const log = minimalLog({ status: 200, ...init });
  log.combined = formatCombined(log);
  return { log, facts: statsFactsOf(log), maxLevel };
}

/** The problem parseLogMetrics reports for a file's text. */
function problem(text: string): string {
  try {
    parseLogMetrics(text, "metrics.json");
  } catch (err) {
    return (err as Error).message;
  }
  return "accepted";
}

describe("--log-metrics files", () => {
  it("reads a file with comments into definitions, app always the first label", () => {
    const dir = mkdtempSync(join(tmpdir(), "reqlog-log-metrics-"));
    const file = join(dir, "metrics.json");
    writeFileSync(
      file,
      `{
        // Signed artifact URLs the forge refused.
        "metrics": [
          {
            "name": "forge_signed_url_rejections_total",
            "help": "401s on the artifact raw route.",
            "where": { "app": "forge", "status": [401], "route": "${raw}" },
            "labels": ["version"],
          },
          { "name": "forge_error_lines_total", "count": "lines", "where": { "min_level": "error", "message_regex": "(?i)timeout" }, "labels": ["level", "app"] }
        ]
      }`,
    );
    expect(loadLogMetrics(file)).toEqual([
      {
        name: "forge_signed_url_rejections_total",
        help: "401s on the artifact raw route.",
        count: "requests",
        where: { apps: ["forge"], statusCodes: [401], routes: [raw] },
        labels: ["app", "version"],
      },
      {
        name: "forge_error_lines_total",
        help: "Log-based metric forge_error_lines_total.",
        count: "lines",
        where: { minLevel: 3, messageRegex: "(?i)timeout" },
        labels: ["app", "level"],
      },
    ]);
  });

  it("refuses what it cannot use with file:line and the reason", () => {
    expect(problem('{"metrics": [\n{"name": "a_total",\n "count": "requests" "x": 1}]}')).toMatch(/^--log-metrics: metrics\.json:3: not JSON: CommaExpected$/);
    expect(problem('{"metrics": [\n{"name": "a_total",\n "labes": ["app"]}]}')).toBe(
      '--log-metrics: metrics.json:3: metric a_total has no field "labes" (fields: name, help, count, where, labels)',
    );
    expect(problem('{"metrics": [{"name": "a_total",\n"where": {\n"message_regex": "x"}}]}')).toBe(
      '--log-metrics: metrics.json:3: metric a_total: where.message_regex filters lines, and this metric counts requests ("count": "requests")',
    );
    expect(problem('{"metrics": [{"name": "a_total",\n"where": {"combined_regex":\n"(a"}}]}')).toMatch(
      /^--log-metrics: metrics\.json:3: metric a_total: where\.combined_regex is not a valid RE2 pattern: .*missing \)/,
    );
    expect(problem('{"metrics": [\n{"name": "errors"}]}')).toBe("--log-metrics: metrics.json:2: metric errors: a counter's name ends in _total");
    expect(problem('{"metrics": [\n{"name": "reqlog_x_total"}]}')).toBe(
      "--log-metrics: metrics.json:2: metric reqlog_x_total: names starting with reqlog_ are reqlog's own metrics",
    );
    expect(problem('{"metrics": [{"name": "a_total"},\n{"name": "a_total"}]}')).toBe("--log-metrics: metrics.json:2: metric a_total is defined twice");
    expect(problem('{"metrics": [{"name": "a_total", "where": {\n"status": ["5xx", "600"]}}]}')).toBe(
      '--log-metrics: metrics.json:2: metric a_total: where.status: "600" is neither a status code (100-599) nor a class (1xx-5xx)',
    );
    expect(problem('{"metrics": [{"name": "a_total", "count": "lines",\n"labels": ["http_route"]}]}')).toBe(
      '--log-metrics: metrics.json:2: metric a_total: "http_route" is not a label a metric of lines can have (labels: app, module, version, level)',
    );
    expect(problem('{"metrics": [{"name": "a_total", "where": {"min_level":\n"loud"}}]}')).toBe(
      "--log-metrics: metrics.json:2: metric a_total: where.min_level must be one of debug, info, warning, error, critical or 0-4",
    );
    expect(problem("[]")).toBe('--log-metrics: metrics.json:1: expected an object {"metrics": [...]}');
    expect(() => loadLogMetrics("/nonexistent/metrics.json")).toThrow(/^--log-metrics: cannot read \/nonexistent\/metrics\.json: ENOENT/);
  });
});

describe("log-based metrics", () => {
  const definitions = parseLogMetrics(
    JSON.stringify({
      metrics: [
        { name: "forge_signed_url_rejections_total", where: { app: "forge", status: 401, route: raw }, labels: ["version"] },
        { name: "forge_server_errors_total", where: { status: "5xx", combined_regex: "zip" }, labels: ["http_route", "status_class"] },
        { name: "forge_warned_requests_total", where: { min_level: "warning" } },
        { name: "forge_timeout_lines_total", count: "lines", where: { min_level: 2, message_regex: "timeout" }, labels: ["level"] },
      ],
    }),
    "metrics.json",
  );

  it("counts the finished requests and new lines each filter passes, by the labels chosen", () => {
    const metrics = createLogMetrics(definitions, { maxSeriesPerApp: 100, overflowed() {} });
    const zip = "/api/v1/repos/o/r/actions/artifacts/7/zip/raw?sig=x";
    metrics.count([
      finished({ resource: zip, status: 401 }),
      finished({ resource: zip, status: 401, versionId: "v2" }),
      finished({ resource: zip, status: 200 }),
      finished({ appId: "ci", resource: zip, status: 401 }),
      finished({ resource: zip, status: 503 }, 2),
      finished({ resource: "/api/v1/teams/1", status: 500 }, 1),
    ]);
    expect(metrics.countsLines).toBe(true);
    metrics.countLines([
      {
        request: { appId: "forge", moduleId: "default", versionId: "v1" },
        lines: [
          { time: 1n, level: 3, message: "db timeout", pos: 0 },
          { time: 2n, level: 1, message: "timeout (retried)", pos: 1 },
          { time: 3n, level: 2, message: "slow", pos: 2 },
        ],
      },
    ]);
    expect(metrics.text().split("\n").filter((l) => l !== "" && !l.startsWith("#"))).toEqual([
      'forge_signed_url_rejections_total{app="forge",version="v1"} 1',
      'forge_signed_url_rejections_total{app="forge",version="v2"} 1',
      `forge_server_errors_total{app="forge",http_route="${raw}",status_class="5xx"} 1`,
      'forge_warned_requests_total{app="forge"} 1',
      'forge_timeout_lines_total{app="forge",level="ERROR"} 1',
    ]);
  });

  it("caps an app's series of a metric with a route label, as the request metrics do", () => {
    const overflowed: string[] = [];
    const byRoute = parseLogMetrics('{"metrics": [{"name": "r_total", "labels": ["http_route"]}]}', "m.json");
    const metrics = createLogMetrics(byRoute, { maxSeriesPerApp: 2, overflowed: (app, metric) => overflowed.push(`${app} ${metric}`) });
    metrics.count([finished({ urlMapEntry: "/a" }), finished({ urlMapEntry: "/b" }), finished({ urlMapEntry: "/c" }), finished({ urlMapEntry: "/d" })]);
    expect(metrics.text()).toContain('r_total{app="forge",http_route="other"} 2\n');
    expect(overflowed).toEqual(["forge r_total", "forge r_total"]);
  });
});

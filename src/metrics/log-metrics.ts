import { levelNames } from "../domain/levels.js";
import type { AppLine } from "../domain/records.js";
import { compileRegex } from "../query/read-plan.js";
import type { FinishedRequest, NewLines } from "../store/store.js";
import { createCappedSeries } from "./capped-series.js";
import type { LogMetricDefinition, LogMetricFilter } from "./log-metrics-file.js";
import { familyHeader } from "./metric-text.js";

export interface LogMetricsOptions {
  /** Most series of one app, per metric, with a route of their own (as for the request metrics). */
  maxSeriesPerApp: number;
  /** Told of each request counted under http_route="other" for want of room. */
  overflowed(app: string, metric: string): void;
}

export interface LogMetrics {
  /** Whether any metric counts app lines (the store then tells of new lines). */
  countsLines: boolean;
  count(requests: readonly FinishedRequest[]): void;
  countLines(lines: readonly NewLines[]): void;
  /** Every metric's family in the text format. */
  text(): string;
}

interface Counter {
  labels: string;
  value: number;
}

const oneOf = <T>(values: readonly T[] | undefined) => (values === undefined ? undefined : new Set(values));

/** The checks of a filter that a request's or a line's app, module and version answer. */
function placeMatcher(f: LogMetricFilter) {
  const apps = oneOf(f.apps);
  const modules = oneOf(f.modules);
  const versions = oneOf(f.versions);
  return (app: string, module: string, version: string) =>
    (apps === undefined || apps.has(app)) && (modules === undefined || modules.has(module)) && (versions === undefined || versions.has(version));
}

/** Whether a finished request passes a filter: the cheap checks first, RE2 last. */
function requestMatcher(f: LogMetricFilter): (r: FinishedRequest) => boolean {
  const place = placeMatcher(f);
  const classes = oneOf(f.statusClasses);
  const codes = oneOf(f.statusCodes);
  const routes = oneOf(f.routes);
  const methods = oneOf(f.methods);
  const combined = f.combinedRegex === undefined ? undefined : compileRegex(f.combinedRegex);
  const minLevel = f.minLevel ?? -1;
  return ({ log, facts, maxLevel }) =>
    place(log.appId, log.moduleId, log.versionId) &&
    (classes === undefined && codes === undefined
      ? true
      : (classes?.has(facts.statusClass) ?? false) || (codes?.has(log.status) ?? false)) &&
    (routes === undefined || routes.has(facts.route)) &&
    (methods === undefined || methods.has(log.method)) &&
    maxLevel >= minLevel &&
    (combined === undefined || combined.test(log.combined));
}

function lineMatcher(f: LogMetricFilter): { place: ReturnType<typeof placeMatcher>; line: (l: AppLine) => boolean } {
  const message = f.messageRegex === undefined ? undefined : compileRegex(f.messageRegex);
  const minLevel = f.minLevel ?? -1;
  return { place: placeMatcher(f), line: (l) => l.level >= minLevel && (message === undefined || message.test(l.message)) };
}

/** A request's value of a label a log-based metric can have. */
function requestLabel(label: string, { log, facts }: FinishedRequest): string {
  switch (label) {
    case "app":
      return log.appId;
    case "module":
      return log.moduleId;
    case "version":
      return log.versionId;
    case "http_route":
      return facts.route;
    case "http_request_method":
      return log.method;
    case "http_response_status_code":
      return String(log.status);
    default:
      return facts.statusClass === 0 ? "other" : `${facts.statusClass}xx`;
  }
}

function lineLabel(label: string, request: NewLines["request"], line: AppLine): string {
  if (label === "app") return request.appId;
  if (label === "module") return request.moduleId;
  if (label === "version") return request.versionId;
  return levelNames[line.level] ?? String(line.level);
}

/**
 * The counters of a --log-metrics file (log-metrics-file.ts): each finished
 * request, or each new app line, that a metric's filter passes adds one to
 * the series of its labels. Like the request metrics they count what this
 * server stored, each request or line once, so several servers' counters
 * add up (`sum without (instance)`).
 */
export function createLogMetrics(definitions: readonly LogMetricDefinition[], options: LogMetricsOptions): LogMetrics {
  const metrics = definitions.map((d) => ({
    ...d,
    matches: d.count === "requests" ? requestMatcher(d.where) : undefined,
    lines: d.count === "lines" ? lineMatcher(d.where) : undefined,
    series: createCappedSeries<Counter>({
      labelNames: d.labels,
      routeLabel: d.labels.indexOf("http_route"),
      maxSeriesPerApp: options.maxSeriesPerApp,
      make: (labels) => ({ labels, value: 0 }),
      overflowed: (app) => options.overflowed(app, d.name),
    }),
  }));
  const requestMetrics = metrics.filter((m) => m.matches !== undefined);
  const lineMetrics = metrics.filter((m) => m.lines !== undefined);

  return {
    countsLines: lineMetrics.length > 0,
    count(requests) {
      if (requestMetrics.length === 0) return;
      for (const request of requests) {
        for (const m of requestMetrics) {
          if (m.matches!(request)) m.series.find(m.labels.map((l) => requestLabel(l, request))).value++;
        }
      }
    },
    countLines(stored) {
      for (const { request, lines } of stored) {
        for (const m of lineMetrics) {
          if (!m.lines!.place(request.appId, request.moduleId, request.versionId)) continue;
          for (const line of lines) {
            if (m.lines!.line(line)) m.series.find(m.labels.map((l) => lineLabel(l, request, line))).value++;
          }
        }
      }
    },
    text() {
      let text = "";
      for (const m of metrics) {
        text += familyHeader(m.name, "counter", m.help);
        for (const s of m.series.all()) text += `${m.name}{${s.labels}} ${s.value}\n`;
      }
      return text;
    },
  };
}

import { readFileSync } from "node:fs";
import { type Node, type ParseError, parseTree, printParseErrorCode } from "jsonc-parser";
import { levelNames } from "../domain/levels.js";
import { compileRegex } from "../query/read-plan.js";
import { labelNamePattern, metricNamePattern } from "./metric-text.js";

/** What a log-based metric counts: finished requests (each once), or app lines (each new one once). */
export type LogMetricSubject = "requests" | "lines";

/** The labels a log-based metric may have, by what it counts (`app` always comes first). */
export const logMetricLabels: Record<LogMetricSubject, readonly string[]> = {
  requests: ["app", "module", "version", "http_route", "http_request_method", "http_response_status_code", "status_class"],
  lines: ["app", "module", "version", "level"],
};

/** Which requests or lines a metric counts; every field given must hold (unset: any). */
export interface LogMetricFilter {
  apps?: readonly string[];
  modules?: readonly string[];
  versions?: readonly string[];
  /** Status classes (5 for 5xx) and status codes: a request counts when either holds its status. */
  statusClasses?: readonly number[];
  statusCodes?: readonly number[];
  /** Stats routes (a url_map_entry, or the template the route table gives the path), exactly. */
  routes?: readonly string[];
  methods?: readonly string[];
  /** RE2, unanchored, over the request's combined line. */
  combinedRegex?: string;
  /** RE2, unanchored, over an app line's message. */
  messageRegex?: string;
  /** requests: with an app line at least this level when it finished; lines: lines at least this level. */
  minLevel?: number;
}

/** One counter of a --log-metrics file. */
export interface LogMetricDefinition {
  name: string;
  help: string;
  count: LogMetricSubject;
  where: LogMetricFilter;
  /** Label names, `app` first. */
  labels: readonly string[];
}

/** Metric name prefixes reqlog's own metrics use: a log-based metric may not take them. */
const reservedPrefixes = ["http_server_", "reqlog_", "grpc_", "process_", "nodejs_"];

/** The filter fields of a metric and which subject each applies to. */
const filterFields: Record<string, readonly LogMetricSubject[]> = {
  app: ["requests", "lines"],
  module: ["requests", "lines"],
  version: ["requests", "lines"],
  status: ["requests"],
  route: ["requests"],
  method: ["requests"],
  combined_regex: ["requests"],
  message_regex: ["lines"],
  min_level: ["requests", "lines"],
};

const metricFields = ["name", "help", "count", "where", "labels"];

/** A problem at a place in the file, as `file:line: reason`. */
class FileProblem extends Error {}

/**
 * Reads and checks a --log-metrics file: JSON (comments and trailing
 * commas allowed) of the form
 * `{"metrics": [{"name", "help", "count", "where": {…}, "labels": […]}]}`.
 * Anything wrong (bad JSON, an unknown field, a filter the subject has not,
 * a pattern RE2 refuses, a name Prometheus would not take or reqlog's own
 * metrics use) is thrown as `file:line: reason`, so `reqlog serve` refuses
 * to start on it rather than count something else.
 */
export function loadLogMetrics(file: string): LogMetricDefinition[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new Error(`--log-metrics: cannot read ${file}: ${err instanceof Error ? err.message : err}`, { cause: err });
  }
  return parseLogMetrics(text, file);
}

/** The definitions of a --log-metrics file's text (`file` names it in errors). */
export function parseLogMetrics(text: string, file: string): LogMetricDefinition[] {
  const lineOf = (offset: number) => {
    let line = 1;
    for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
    return line;
  };
  const fail = (node: Node | undefined, reason: string): never => {
    throw new FileProblem(`${file}:${lineOf(node?.offset ?? 0)}: ${reason}`);
  };
  try {
    const errors: ParseError[] = [];
    const root = parseTree(text, errors, { allowTrailingComma: true, disallowComments: false });
    if (errors.length > 0) {
      const e = errors[0]!;
      throw new FileProblem(`${file}:${lineOf(e.offset)}: not JSON: ${printParseErrorCode(e.error)}`);
    }
    if (root?.type !== "object") return fail(root, 'expected an object {"metrics": [...]}');
    const top = properties(root, ["metrics"], "the file", fail);
    const list = top.get("metrics");
    if (list?.type !== "array") return fail(list ?? root, '"metrics" must be a list of metrics');
    const names = new Set<string>();
    return (list.children ?? []).map((node, i) => {
      const metric = definition(node, `metrics[${i}]`, fail);
      if (names.has(metric.name)) fail(node, `metric ${metric.name} is defined twice`);
      names.add(metric.name);
      return metric;
    });
  } catch (err) {
    if (err instanceof FileProblem) throw new Error(`--log-metrics: ${err.message}`);
    throw err;
  }
}

type Fail = (node: Node | undefined, reason: string) => never;

/** An object's properties by key (value nodes), refusing keys not in `allowed`. */
function properties(node: Node, allowed: readonly string[], what: string, fail: Fail): Map<string, Node> {
  const found = new Map<string, Node>();
  for (const property of node.children ?? []) {
    const [key, value] = property.children ?? [];
    const name = String(key?.value);
    if (!allowed.includes(name)) fail(property, `${what} has no field "${name}" (fields: ${allowed.join(", ")})`);
    if (found.has(name)) fail(property, `${what} has "${name}" twice`);
    found.set(name, value!);
  }
  return found;
}

function text(node: Node | undefined, what: string, fail: Fail): string {
  if (node?.type !== "string" || node.value === "") return fail(node, `${what} must be a non-empty string`);
  return node.value as string;
}

/** A string or a list of strings (or numbers, when `numbers`), as a list. */
function list(node: Node, what: string, fail: Fail, numbers = false): (string | number)[] {
  const items = node.type === "array" ? (node.children ?? []) : [node];
  if (items.length === 0) fail(node, `${what} is an empty list: leave it out to count any`);
  return items.map((item) => {
    if (item.type === "string" && item.value !== "") return item.value as string;
    if (numbers && item.type === "number") return item.value as number;
    return fail(item, `${what} must be ${numbers ? "strings or numbers" : "strings"}, or a list of them`);
  });
}

function regex(node: Node, what: string, fail: Fail): string {
  const pattern = text(node, what, fail);
  try {
    compileRegex(pattern);
  } catch (err) {
    fail(node, `${what} is not a valid RE2 pattern: ${err instanceof Error ? err.message : err}`);
  }
  return pattern;
}

function level(node: Node, what: string, fail: Fail): number {
  const value = node.value as unknown;
  if (typeof value === "number" && Number.isInteger(value) && value >= 0 && value <= 4) return value;
  const index = typeof value === "string" ? levelNames.indexOf(value.toUpperCase() as (typeof levelNames)[number]) : -1;
  if (index < 0) fail(node, `${what} must be one of ${levelNames.join(", ").toLowerCase()} or 0-4`);
  return index;
}

function definition(node: Node, what: string, fail: Fail): LogMetricDefinition {
  if (node.type !== "object") fail(node, `${what} must be an object with name, help, count, where and labels`);
  const named = node.children?.find((p) => p.children?.[0]?.value === "name")?.children?.[1];
  const fields = properties(node, metricFields, typeof named?.value === "string" ? `metric ${named.value}` : what, fail);
  const name = text(fields.get("name"), `${what}.name`, fail);
  const at = `metric ${name}`;
  if (!metricNamePattern.test(name)) fail(fields.get("name"), `${at}: not a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)`);
  if (!name.endsWith("_total")) fail(fields.get("name"), `${at}: a counter's name ends in _total`);
  const reserved = reservedPrefixes.find((p) => name.startsWith(p));
  if (reserved) fail(fields.get("name"), `${at}: names starting with ${reserved} are reqlog's own metrics`);
  const help = fields.has("help") ? text(fields.get("help"), `${at}: help`, fail) : `Log-based metric ${name}.`;
  const countNode = fields.get("count");
  const count = countNode === undefined ? "requests" : text(countNode, `${at}: count`, fail);
  if (count !== "requests" && count !== "lines") fail(countNode, `${at}: count must be "requests" or "lines", not "${count}"`);
  const subject = count as LogMetricSubject;
  const where: LogMetricFilter = {};
  const whereNode = fields.get("where");
  if (whereNode !== undefined) {
    if (whereNode.type !== "object") fail(whereNode, `${at}: where must be an object of filters`);
    for (const [key, value] of properties(whereNode, Object.keys(filterFields), `${at}: where`, fail)) {
      const field = `${at}: where.${key}`;
      if (!filterFields[key]!.includes(subject)) {
        fail(value.parent, `${field} filters ${filterFields[key]![0]}, and this metric counts ${subject} ("count": "${subject}")`);
      }
      if (key === "app") where.apps = list(value, field, fail) as string[];
      else if (key === "module") where.modules = list(value, field, fail) as string[];
      else if (key === "version") where.versions = list(value, field, fail) as string[];
      else if (key === "route") where.routes = list(value, field, fail) as string[];
      else if (key === "method") where.methods = list(value, field, fail) as string[];
      else if (key === "combined_regex") where.combinedRegex = regex(value, field, fail);
      else if (key === "message_regex") where.messageRegex = regex(value, field, fail);
      else if (key === "min_level") where.minLevel = level(value, field, fail);
      else if (key === "status") {
        const classes: number[] = [];
        const codes: number[] = [];
        for (const status of list(value, field, fail, true)) {
          const cls = /^([1-5])xx$/i.exec(String(status));
          const code = Number(status);
          if (cls) classes.push(Number(cls[1]));
          else if (Number.isInteger(code) && code >= 100 && code <= 599) codes.push(code);
          else fail(value, `${field}: "${status}" is neither a status code (100-599) nor a class (1xx-5xx)`);
        }
        if (classes.length > 0) where.statusClasses = classes;
        if (codes.length > 0) where.statusCodes = codes;
      }
    }
  }
  const allowed = logMetricLabels[subject];
  const labels = ["app"];
  const labelsNode = fields.get("labels");
  if (labelsNode !== undefined) {
    for (const label of list(labelsNode, `${at}: labels`, fail) as string[]) {
      if (!labelNamePattern.test(label) || !allowed.includes(label)) {
        fail(labelsNode, `${at}: "${label}" is not a label a metric of ${subject} can have (labels: ${allowed.join(", ")})`);
      }
      if (!labels.includes(label)) labels.push(label);
    }
  }
  return { name, help, count: subject, where, labels };
}

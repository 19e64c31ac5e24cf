import { create, isFieldSet, toJsonString } from "@bufbuild/protobuf";
import {
  type StatsClient,
  StatsClientSchema,
  type StatsFigures,
  type StatsResponse,
  StatsRequestSchema,
  StatsResponseSchema,
  type StatsRoute,
  StatsSplit,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { callFailure, type ClientOptions, createLogServiceClient } from "../client/log-service-client.js";
import { parseTime } from "./read.js";
import { bucketTime } from "./usage.js";

export interface StatsOptions extends ClientOptions {
  app: string;
  module?: string;
  version: string[];
  since?: string;
  until?: string;
  resolution: number;
  perVersion: boolean;
  statusClass: string[];
  top: number;
  /** What the rows are: a route and status class each, a status class each (routes merged), or a time bucket each. */
  split: "route" | "class" | "none";
  /** A pattern, or true for `defaultBotPattern`. */
  excludeBots?: string | true;
  output: "table" | "json";
}

/** What `--exclude-bots` leaves out when given no pattern: crawlers, spiders and other bots by their own names. */
export const defaultBotPattern = "(?i)bot|crawl|spider|slurp";

/** A --status-class value: 1-5 or 1xx-5xx, 0 or "other" for statuses outside 100..599. */
export function parseStatusClass(text: string): number {
  const m = /^([0-5])(xx)?$/i.exec(text.trim());
  if (m) return Number(m[1]);
  if (text.trim().toLowerCase() === "other") return 0;
  throw new Error(`--status-class: "${text}" is not one of 1xx … 5xx (or 1 … 5) or other (0)`);
}

/** A latency in µs, in the unit that reads best: 850µs, 12.3ms, 1.25s. */
export function formatLatency(usec: bigint | number): string {
  const n = Number(usec);
  const short = (x: number) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
  if (n < 1000) return `${n}µs`;
  return n < 1_000_000 ? `${short(n / 1000)}ms` : `${short(n / 1_000_000)}s`;
}

const count = (n: bigint | number) => n.toLocaleString("en-US");
const statusClass = (c: number) => (c === 0 ? "other" : `${c}xx`);
const routeName = (route: string | undefined) => (route === undefined || route === "" ? "(other routes)" : route);
const errorRate = (f: StatsFigures) => (f.requests === 0n ? "0%" : `${((Number(f.errors) / Number(f.requests)) * 100).toFixed(1)}%`);

/** Columns padded to their widest cell, each aligned as `align` says: "l" (text) or "r" (numbers). */
function columns(rows: string[][], align: string): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => (align[i] === "r" ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join("  ").trimEnd());
}

const figureCells = (f: StatsFigures) => [
  count(f.requests), count(f.errors), count(f.bytesSent),
  formatLatency(f.latencyP50), formatLatency(f.latencyP90), formatLatency(f.latencyP99), formatLatency(f.latencyMax),
];

/** A top list: its title, then a row per route or client. */
function topList(title: string, rows: string[][]): string[] {
  return rows.length === 0 ? [] : ["", `${title}:`, ...columns(rows, "rl").map((line) => `  ${line}`)];
}

const splits = { route: StatsSplit.ROUTE_CLASS, class: StatsSplit.CLASS, none: StatsSplit.NONE } as const;
const classNames = ["other", "1xx", "2xx", "3xx", "4xx", "5xx"];

/** A client's requests: exact, or an estimate with its bound (≈1,234 ±56). */
const clientRequests = (c: StatsClient) => (c.maxError > 0n ? `≈${count(c.requests)} ±${count(c.maxError)}` : count(c.requests));

/**
 * The table (a row per bucket, route (unless merged), status class and, when
 * asked, version; or with split none a row per bucket with each class's
 * requests), then the total and the top lists.
 */
export function formatStats(response: StatsResponse, perVersion: boolean, split: StatsOptions["split"] = "route"): string {
  if (response.bucket.length === 0 && response.record.length === 0) return "no finished requests in that range";
  const figureHead = ["requests", "errors", "bytes", "p50", "p90", "p99", "max"];
  let table: string[];
  if (split === "none") {
    const head = ["bucket (UTC)", ...figureHead, ...classNames.slice(1), classNames[0]!];
    const classCells = (c: bigint[]) => [...c.slice(1), c[0] ?? 0n].map(count);
    const rows = response.bucket.map((b) => [bucketTime(Number(b.startTime)), ...figureCells(b.figures!), ...classCells(b.classRequests)]);
    rows.push(["total", ...figureCells(response.total!), ...classNames.map(() => "")]);
    table = columns([head, ...rows], `l${"r".repeat(head.length - 1)}`);
  } else {
    const head = ["bucket (UTC)", ...(split === "route" ? ["route"] : []), "class", ...(perVersion ? ["version"] : []), ...figureHead];
    const rows = response.record.map((r) => [
      bucketTime(Number(r.startTime)), ...(split === "route" ? [routeName(r.route)] : []), statusClass(r.statusClass),
      ...(perVersion ? [`${r.moduleId}/${r.versionId}`] : []), ...figureCells(r.figures!),
    ]);
    const labels = head.length - figureHead.length;
    rows.push(["total", ...Array.from({ length: labels - 1 }, () => ""), ...figureCells(response.total!)]);
    table = columns([head, ...rows], `${"l".repeat(labels)}${"r".repeat(figureHead.length)}`);
  }
  const route = (r: StatsRoute) => [
    count(r.figures!.requests), routeName(r.route), `p50 ${formatLatency(r.figures!.latencyP50)}`,
    `p99 ${formatLatency(r.figures!.latencyP99)}`, `errors ${errorRate(r.figures!)}`,
  ];
  const client = (c: StatsClient) => [
    clientRequests(c), isFieldSet(c, StatsClientSchema.field.name) ? c.name || "-" : "(other)", `errors ${count(c.errors)}`,
  ];
  const estimated = [...response.topClientIp, ...response.topUserAgent].some((c) => c.maxError > 0n);
  return [
    ...table,
    `(${bucketTime(Number(response.startTime))} to ${bucketTime(Number(response.endTime))} UTC; latency percentiles within one histogram bucket, ~19%)`,
    ...topList("top routes by requests", response.topRouteByRequests.map(route)),
    ...topList("top routes by p99 latency", response.topRouteByP99.map(route)),
    ...topList("top client IPs", response.topClientIp.map(client)),
    ...topList("top user agents", response.topUserAgent.map(client)),
    ...(estimated ? ["", "(≈: estimated from the top-100 summaries of each hour and day, within ± of the exact count)"] : []),
  ].join("\n");
}

/** The (module, version) pairs the flags name: --version with --module (default "default"), or a whole module. */
function moduleVersions(options: StatsOptions) {
  if (options.version.length > 0) return options.version.map((versionId) => ({ moduleId: options.module ?? "default", versionId }));
  return options.module !== undefined ? [{ moduleId: options.module }] : [];
}

/** `reqlog stats`: per-route request statistics and top lists, as a table or JSON. */
export async function statsCommand(
  options: StatsOptions,
  print: (text: string) => void = (t) => process.stdout.write(`${t}\n`),
): Promise<void> {
  const now = Date.now();
  const seconds = (when: string, what: string) => parseTime(when, what, now) / 1_000_000n;
  const request = create(StatsRequestSchema, {
    appId: options.app,
    moduleVersion: moduleVersions(options),
    ...(options.since ? { startTime: seconds(options.since, "--since") } : {}),
    ...(options.until ? { endTime: seconds(options.until, "--until") } : {}),
    resolutionHours: options.resolution,
    perVersion: options.perVersion,
    statusClass: options.statusClass.map(parseStatusClass),
    topN: options.top,
    split: splits[options.split],
    ...(options.excludeBots !== undefined
      ? { excludeUserAgentRegex: options.excludeBots === true ? defaultBotPattern : options.excludeBots }
      : {}),
  });
  const client = createLogServiceClient(options);
  let response: StatsResponse;
  try {
    response = await client.stats(request);
  } catch (err) {
    throw new Error(callFailure(err));
  } finally {
    client.close();
  }
  print(options.output === "json" ? toJsonString(StatsResponseSchema, response) : formatStats(response, options.perVersion, options.split));
}

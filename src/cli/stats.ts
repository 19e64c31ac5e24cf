import { create, isFieldSet, toJsonString } from "@bufbuild/protobuf";
import {
  type StatsClient,
  StatsClientSchema,
  type StatsFigures,
  type StatsResponse,
  StatsRequestSchema,
  StatsResponseSchema,
  type StatsRoute,
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

/**
 * The table (a row per bucket, route, status class and, when asked,
 * version, then the total) and the top lists.
 */
export function formatStats(response: StatsResponse, perVersion: boolean): string {
  if (response.record.length === 0) return "no finished requests in that range";
  const head = ["bucket (UTC)", "route", "class", ...(perVersion ? ["version"] : []), "requests", "errors", "bytes", "p50", "p90", "p99", "max"];
  const rows = response.record.map((r) => [
    bucketTime(Number(r.startTime)), routeName(r.route), statusClass(r.statusClass),
    ...(perVersion ? [`${r.moduleId}/${r.versionId}`] : []), ...figureCells(r.figures!),
  ]);
  rows.push(["total", "", "", ...(perVersion ? [""] : []), ...figureCells(response.total!)]);
  const route = (r: StatsRoute) => [
    count(r.figures!.requests), routeName(r.route), `p50 ${formatLatency(r.figures!.latencyP50)}`,
    `p99 ${formatLatency(r.figures!.latencyP99)}`, `errors ${errorRate(r.figures!)}`,
  ];
  const client = (c: StatsClient) => [
    count(c.requests), isFieldSet(c, StatsClientSchema.field.name) ? c.name || "-" : "(other)", `errors ${count(c.errors)}`,
  ];
  return [
    ...columns([head, ...rows], perVersion ? "llllrrrrrrr" : "lllrrrrrrr"),
    `(${bucketTime(Number(response.startTime))} to ${bucketTime(Number(response.endTime))} UTC; latency percentiles within one histogram bucket, ~19%)`,
    ...topList("top routes by requests", response.topRouteByRequests.map(route)),
    ...topList("top routes by p99 latency", response.topRouteByP99.map(route)),
    ...topList("top client IPs", response.topClientIp.map(client)),
    ...topList("top user agents", response.topUserAgent.map(client)),
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
  print(options.output === "json" ? toJsonString(StatsResponseSchema, response) : formatStats(response, options.perVersion));
}

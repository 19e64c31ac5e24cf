import ms from "ms";
import { defaultLimits, type Limits } from "./limits.js";
import type { ConnectionLimits } from "./net/connection-guard.js";
import type { SyncMode } from "./store/sqlite/open-database.js";
import type { OtlpMapping } from "./ingest/otlp-log-records.js";
import type { PrivacyOptions } from "./write/privacy.js";
import type { AppMetricsOptions } from "./metrics/metrics.js";

/** Everything `reqlog serve` is configured with; flags and REQLOG_* variables fill it. */
export interface ServeConfig {
  /** Where requests are kept: the embedded SQLite file (`db`), or ClickHouse (`clickhouse`). */
  store: "sqlite" | "clickhouse";
  clickhouse: ClickHouseConfig;
  listen: string;
  /** The HTTP port (Connect, gRPC-Web, gRPC, the dashboard, /metrics); undefined: off. */
  httpListen: string | undefined;
  /** Serve /metrics on the HTTP port. */
  metrics: boolean;
  /** The request metrics and log-based metrics on /metrics (docs/alerting.md). */
  appMetrics: AppMetricsOptions;
  /** Alertmanager's URL, whose alerts the dashboard shows (undefined: none). */
  alertmanagerUrl: string | undefined;
  /** How often Alertmanager's alerts are read in the background (ms). */
  alertmanagerPollMs: number;
  db: string;
  sync: SyncMode;
  shutdownTimeoutMs: number;
  logLevel: string;
  /** Delete requests older than this, in ms (0: keep everything). */
  retentionMs: number;
  /** Worker threads for Reads (0: on the main thread). */
  readWorkers: number;
  /** Worker threads that decode and validate large Writes and Ingest batches (0: on the main thread). */
  prepareWorkers: number;
  /** TLS files (PEM); without cert and key the server speaks plaintext. */
  tls: TlsFiles;
  /** Serve on a non-loopback address without tokens (loudly logged). */
  allowRemoteWithoutAuth: boolean;
  limits: Limits;
  /** Connections held on each port, their timeouts and streams per connection. */
  connections: ConnectionLimits;
  /** Redaction and IP anonymisation of what is written (docs/privacy.md). */
  privacy: PrivacyOptions;
  /** Which resource attributes name the app, version and module of OTLP log records. */
  otlp?: OtlpMapping;
}

export interface ClickHouseConfig {
  /** Its HTTP interface, e.g. http://127.0.0.1:8123. */
  url: string;
  /** The database, created and migrated on start. */
  database: string;
  user?: string;
  password?: string;
  /**
   * A cluster named in the servers' remote_servers: tables are created ON
   * CLUSTER on every shard, with Distributed tables over them.
   */
  cluster?: string;
}

export interface TlsFiles {
  cert?: string;
  key?: string;
  /** CA bundle that client certificates must chain to; when set, clients must present one. */
  clientCa?: string;
}

export const serveDefaults = {
  store: "sqlite" as const,
  clickhouseUrl: "http://127.0.0.1:8123",
  clickhouseDatabase: "reqlog",
  listen: "127.0.0.1:50051",
  httpListen: "127.0.0.1:8080",
  db: "reqlog.db",
  sync: "full" as SyncMode,
  shutdownTimeout: "10s",
  logLevel: "info",
  readWorkers: 2,
  // Measured slower on two cores (docs/benchmarks.md): the main thread is not the one waiting on decoding.
  prepareWorkers: 0,
  retention: "0",
  alertmanagerPoll: "15s",
};

/** A comma-separated list of app ids ("" or blanks between commas are refused). */
export function parseAppList(text: string, what: string): string[] {
  const apps = text.split(",").map((a) => a.trim());
  if (apps.some((a) => a === "")) throw new Error(`${what}: "${text}" is not a comma-separated list of app ids`);
  return apps;
}

/** An http(s) URL (Alertmanager's). */
export function parseHttpUrl(text: string, what: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error(`${what}: "${text}" is not a URL (e.g. http://127.0.0.1:9093)`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error(`${what}: "${text}" is not an http or https URL`);
  return text;
}

/** A duration such as 500ms, 10s, 5m, 2h or 7d, in milliseconds ("0" is zero). */
export function parseDuration(text: string, what: string): number {
  if (text.trim() === "0") return 0;
  const value = /^\d+(\.\d+)?\s*(ms|s|m|h|d|w)$/i.test(text.trim()) ? ms(text.trim() as ms.StringValue) : undefined;
  if (value === undefined || !Number.isFinite(value) || value < 0) {
    throw new Error(`${what}: "${text}" is not a duration (e.g. 500ms, 10s, 5m, 2h, 7d)`);
  }
  return value;
}

/** A duration above zero (a timeout), in milliseconds. */
export function parsePositiveDuration(text: string, what: string): number {
  const value = parseDuration(text, what);
  if (value <= 0) throw new Error(`${what}: "${text}" must be more than 0 (e.g. 500ms, 10s, 5m)`);
  return value;
}

/** A whole number ≥ 0. */
export function parseCount(text: string, what: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`${what}: "${text}" is not a whole number ≥ 0`);
  return value;
}

/** A whole number ≥ 1 (limits). */
export function parsePositiveInt(text: string, what: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`${what}: "${text}" is not a whole number ≥ 1`);
  return value;
}

/** HOST:PORT with a numeric port; [v6]:PORT for IPv6. */
export function parseListen(text: string, what = "--listen"): string {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+):(\d{1,5})$/.exec(text);
  if (!match || Number(match[2]) > 65535) {
    throw new Error(`${what}: "${text}" is not HOST:PORT (e.g. 127.0.0.1:50051, [::1]:50051, 0.0.0.0:50051)`);
  }
  return text;
}

/** HOST:PORT of the HTTP port, or "off" (kept as "off": a parser's undefined reads as "" to commander). */
export function parseHttpListen(text: string, what = "--http-listen"): string {
  return text === "off" ? text : parseListen(text, what);
}

/** Whether HOST:PORT listens on the loopback interface only. */
export function isLoopback(listen: string): boolean {
  const host = listen.slice(0, listen.lastIndexOf(":")).replace(/^\[|\]$/g, "");
  return host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

export { defaultLimits };

import { create } from "@bufbuild/protobuf";
import { type RequestLog, RequestLogSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { formatCombined } from "../format/combined-line.js";
import { ReqlogError } from "../reqlog-error.js";
import type { RouteTable } from "../routes/route-table.js";
import { maxIdentifierBytes } from "../write/identifiers.js";

/** Where a log's records go, and how their route is named. */
export interface RecordTarget {
  appId: string;
  /** Left unset ("default") when undefined. */
  moduleId?: string;
  versionId: string;
  /** url_map_entry is the template of the request's path in this table (unset when none matches). */
  routes: RouteTable;
}

/** The nginx variables that give a record's time; a format needs one. */
export const timeVariables = ["time_local", "time_iso8601", "msec"] as const;

const months: Record<string, number> = {
  Jan: 0, Feb: 1, Mar: 2, Apr: 3, May: 4, Jun: 5, Jul: 6, Aug: 7, Sep: 8, Oct: 9, Nov: 10, Dec: 11,
};

let lastLocal = "";
let lastLocalUsec = 0n;

/** `18/Nov/2026:11:06:40 +0100` in µs since the epoch (lines of one second share the work). */
function timeLocalUsec(text: string): bigint {
  if (text === lastLocal) return lastLocalUsec;
  const month = months[text.slice(3, 6)];
  if (month === undefined) throw ReqlogError.invalid(`$time_local "${text}" has no month name such as Nov`);
  const num = (from: number, to: number) => Number(text.slice(from, to));
  const ms = Date.UTC(num(7, 11), month, num(0, 2), num(12, 14), num(15, 17), num(18, 20));
  const zone = (text[21] === "-" ? -1 : 1) * (num(22, 24) * 60 + num(24, 26));
  if (Number.isNaN(ms) || Number.isNaN(zone) || num(0, 2) < 1 || num(0, 2) > 31 || num(12, 14) > 23 || num(15, 17) > 59 || num(18, 20) > 60) {
    throw ReqlogError.invalid(`$time_local "${text}" is not a valid time`);
  }
  lastLocal = text;
  lastLocalUsec = BigInt(ms - zone * 60_000) * 1000n;
  return lastLocalUsec;
}

/** Decimal seconds ("1795000000.123", "0.004") as µs, exactly (no float rounding). */
function secondsUsec(text: string): bigint {
  const [whole, fraction = ""] = text.split(".");
  return BigInt(whole!) * 1_000_000n + BigInt((fraction + "000000").slice(0, 6));
}

/** The time the log gives for the request (nginx logs a request when it ends), in µs. */
function loggedTime(values: Record<string, string>): bigint {
  if (values.msec !== undefined) return secondsUsec(values.msec);
  if (values.time_local !== undefined) return timeLocalUsec(values.time_local);
  const iso = values.time_iso8601!;
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) throw ReqlogError.invalid(`$time_iso8601 "${iso}" is not a valid time`);
  return BigInt(ms) * 1000n;
}

const encoder = new TextEncoder();

const isSet = (value: string | undefined): value is string => value !== undefined && value !== "" && value !== "-";

/**
 * The latency: $request_time, else the sum of $upstream_response_time's
 * figures ("0.004, 0.002 : 0.001" when nginx tried several upstreams).
 */
function latencyUsec(values: Record<string, string>): bigint | undefined {
  if (isSet(values.request_time)) return secondsUsec(values.request_time);
  const upstream = values.upstream_response_time;
  if (!isSet(upstream)) return undefined;
  const figures = upstream.split(/[,:]/).map((s) => s.trim()).filter((s) => /^\d+(\.\d+)?$/.test(s));
  if (figures.length === 0) return undefined;
  return figures.reduce((sum, s) => sum + secondsUsec(s), 0n);
}

const requestLine = /^(\S+) (.+?)(?: (HTTP\/\d+(?:\.\d+)?))?$/s;

/**
 * Method, resource and protocol: from $request, or from $request_method,
 * $request_uri (or $uri and $args) and $server_protocol. A request line that
 * is no request (nginx writes "-" for a connection closed before one, or
 * the bytes of a TLS handshake sent to a plain port) is kept with method "-"
 * and the text as the resource.
 */
function requestParts(values: Record<string, string>): { method: string; resource: string; httpVersion?: string } {
  if (values.request !== undefined) {
    const m = requestLine.exec(values.request);
    if (m) return { method: m[1]!, resource: m[2]!, httpVersion: m[3] };
    return { method: "-", resource: values.request === "" ? "-" : values.request };
  }
  const method = isSet(values.request_method) ? values.request_method : "-";
  const uri = isSet(values.request_uri)
    ? values.request_uri
    : isSet(values.uri)
      ? values.uri + (isSet(values.args) ? `?${values.args}` : "")
      : "-";
  return { method, resource: uri, httpVersion: isSet(values.server_protocol) ? values.server_protocol : undefined };
}

/** An `ip:port` or `[ipv6]:port` address's host; other text as it is. */
export function hostOfAddress(address: string): string {
  const v6 = /^\[([^\]]+)\]:\d+$/.exec(address);
  if (v6) return v6[1]!;
  const v4 = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(address);
  return v4 ? v4[1]! : address;
}

function sizeOf(text: string | undefined): bigint | undefined {
  return text === undefined ? undefined : text === "-" ? 0n : BigInt(text);
}

/**
 * The request record of one access-log line, from the values of its nginx
 * variables: the logged time is the request's end (start = end − latency
 * when the line has $request_time or $upstream_response_time, else the
 * same), the request id the line's own $request_id or `fallbackId`, and
 * `combined` the original line whenever the line reqlog would derive from
 * the record differs from it (other formats, escapes, time zones).
 * Throws INVALID_ARGUMENT naming what is wrong with the line.
 */
export function accessLogRecord(
  values: Record<string, string>,
  line: string,
  fallbackId: () => string,
  target: RecordTarget,
): RequestLog {
  const end = loggedTime(values);
  const latency = latencyUsec(values);
  const start = latency !== undefined ? end - latency : end;
  if (start < 0n) throw ReqlogError.invalid(`the request would start before 1970 (${start} µs)`);
  const requestId = isSet(values.request_id) ? values.request_id : fallbackId();
  if (Buffer.byteLength(requestId) > maxIdentifierBytes) {
    throw ReqlogError.invalid(`$request_id is ${Buffer.byteLength(requestId)} bytes long, over the maximum of ${maxIdentifierBytes}`);
  }
  const { method, resource, httpVersion } = requestParts(values);
  const address = values.remote_addr;
  const size = sizeOf(values.body_bytes_sent) ?? sizeOf(values.bytes_sent);
  const host = isSet(values.host) ? values.host : isSet(values.http_host) ? values.http_host : undefined;
  // Fields are set one by one on an empty message: create()'s init walk
  // costs more than the parsing (an import makes a million of these).
  const log = create(RequestLogSchema);
  log.appId = target.appId;
  log.versionId = target.versionId;
  if (target.moduleId !== undefined) log.moduleId = target.moduleId;
  log.requestId = encoder.encode(requestId);
  log.startTime = start;
  log.endTime = end;
  log.method = method;
  log.resource = resource;
  // Every required field is set, as a strict proto2 client must send them:
  // "" and 0 where the line has no value (the server reads them as unset).
  log.ip = isSet(address) ? hostOfAddress(address) : "";
  log.latency = end - start;
  log.mcycles = 0n;
  log.httpVersion = httpVersion ?? "";
  log.status = values.status !== undefined ? Number(values.status) : 0;
  log.responseSize = size ?? 0n;
  log.urlMapEntry = target.routes.match(resource) ?? "";
  if (isSet(values.remote_user)) log.nickname = values.remote_user;
  if (isSet(values.http_referer)) log.referrer = values.http_referer;
  if (isSet(values.http_user_agent)) log.userAgent = values.http_user_agent;
  if (host !== undefined) log.host = host;
  // The server derives the same line from the fields when combined is "".
  log.combined = formatCombined(log) === line ? "" : line;
  return log;
}

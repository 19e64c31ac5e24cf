import { createHash } from "node:crypto";
import { create, toBinary } from "@bufbuild/protobuf";
import type { ExportLogsServiceRequest } from "../../gen/opentelemetry/proto/collector/logs/v1/logs_service_pb.js";
import type { AnyValue, KeyValue } from "../../gen/opentelemetry/proto/common/v1/common_pb.js";
import { type LogRecord, LogRecordSchema } from "../../gen/opentelemetry/proto/logs/v1/logs_pb.js";
import { type RequestLog, RequestLogSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import type { RequestContext } from "../domain/records.js";
import type { IncomingLine } from "../write/validate-lines.js";

/** Which resource attributes name where OpenTelemetry log records go. */
export interface OtlpMapping {
  /** The app: service.name by default. */
  appAttribute: string;
  /** The version: service.version by default. */
  versionAttribute: string;
  /** The module (none by default: "default"). */
  moduleAttribute?: string;
  /** The version of a resource without the version attribute. */
  defaultVersion: string;
}

export const defaultOtlpMapping: OtlpMapping = {
  appAttribute: "service.name",
  versionAttribute: "service.version",
  defaultVersion: "unknown",
};

/** A log record that could not be taken, named by its place in the request. */
export interface OtlpRejection {
  where: string;
  problem: string;
}

/** What an Export carries, as reqlog's records and lines (not yet validated by the write path). */
export interface OtlpConversion {
  /** Request records, from log records with HTTP server attributes. */
  records: { log: RequestLog; where: string }[];
  /** App lines of each request (named by trace, or the per-resource request), each line with its place. */
  lines: { request: RequestContext; lines: (IncomingLine & { where: string })[] }[];
  rejected: OtlpRejection[];
  /** Log records in the request. */
  total: number;
}

type Attributes = Map<string, AnyValue | undefined>;

const attributesOf = (list: readonly KeyValue[]): Attributes => new Map(list.map((kv) => [kv.key, kv.value]));

/** An attribute value as text (numbers and booleans written out; arrays and maps as JSON). */
function textOf(value: AnyValue | undefined): string | undefined {
  const v = value?.value;
  switch (v?.case) {
    case undefined:
      return undefined;
    case "stringValue":
      return v.value;
    case "intValue":
    case "doubleValue":
    case "boolValue":
      return String(v.value);
    default:
      return JSON.stringify(plain(value));
  }
}

/** An AnyValue as plain JSON data. */
function plain(value: AnyValue | undefined): unknown {
  const v = value?.value;
  if (v === undefined) return null;
  switch (v.case) {
    case undefined:
      return null;
    case "intValue":
      return Number.isSafeInteger(Number(v.value)) ? Number(v.value) : String(v.value);
    case "bytesValue":
      return Buffer.from(v.value).toString("base64");
    case "arrayValue":
      return v.value.values.map(plain);
    case "kvlistValue":
      return Object.fromEntries(v.value.values.map((kv) => [kv.key, plain(kv.value)]));
    default:
      return v.value;
  }
}

/** The first of several attribute names (current semantic conventions first, then older ones) that is set. */
function first(attributes: Attributes, ...names: string[]): AnyValue | undefined {
  for (const name of names) {
    const value = attributes.get(name);
    if (value?.value.case !== undefined) return value;
  }
  return undefined;
}

/** An integer attribute; a problem when it is set but not an integer. */
function integerOf(value: AnyValue | undefined, name: string): bigint | undefined {
  const v = value?.value;
  if (v?.case === undefined) return undefined;
  if (v.case === "intValue") return v.value;
  if (v.case === "doubleValue" && Number.isInteger(v.value)) return BigInt(v.value);
  if (v.case === "stringValue" && /^-?\d+$/.test(v.value)) return BigInt(v.value);
  throw new Error(`${name} is ${JSON.stringify(plain(value))}, not an integer`);
}

function secondsOf(value: AnyValue | undefined, name: string): number | undefined {
  const v = value?.value;
  if (v?.case === undefined) return undefined;
  const n = v.case === "doubleValue" ? v.value : v.case === "intValue" ? Number(v.value) : v.case === "stringValue" ? Number(v.value) : NaN;
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} is ${JSON.stringify(plain(value))}, not a duration`);
  return n;
}

/**
 * The app line level of an OpenTelemetry severity: TRACE and DEBUG (1–8) are
 * 0, INFO (9–12) 1, WARN (13–16) 2, ERROR (17–20) 3, FATAL (21–24) 4; an
 * unset number is read from the severity text (INFO when it names none).
 */
export function levelOf(severityNumber: number, severityText: string): number {
  if (severityNumber >= 1 && severityNumber <= 24) return Math.max(0, Math.floor((severityNumber - 1) / 4) - 1);
  const text = severityText.toLowerCase();
  if (/^(trace|debug)/.test(text)) return 0;
  if (/^warn/.test(text)) return 2;
  if (/^err/.test(text)) return 3;
  if (/^(fatal|crit|emerg|alert)/.test(text)) return 4;
  return 1;
}

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");
const isZero = (bytes: Uint8Array) => bytes.every((b) => b === 0);

/** µs since the epoch of a log record: its time, else the time it was observed. */
function timeOf(record: LogRecord): bigint | undefined {
  const ns = record.timeUnixNano !== 0n ? record.timeUnixNano : record.observedTimeUnixNano;
  return ns === 0n ? undefined : ns / 1000n;
}

/** The request path and query of url.path and url.query, or of url.full. */
function resourceOf(attributes: Attributes): string | undefined {
  const path = textOf(first(attributes, "url.path", "http.target"));
  if (path !== undefined) {
    const query = textOf(attributes.get("url.query"));
    return query ? `${path}?${query}` : path;
  }
  const full = textOf(first(attributes, "url.full", "http.url"));
  if (full === undefined) return undefined;
  try {
    const url = new URL(full);
    return `${url.pathname}${url.search}`;
  } catch {
    return full;
  }
}

/**
 * A request record from a log record with HTTP server attributes
 * (http.request.method and url.path or url.full): its time is the request's
 * end, its duration (http.server.request.duration in seconds, or the older
 * http.server.duration in ms) gives the start.
 */
function requestRecord(attributes: Attributes, end: bigint, base: Pick<RequestLog, "appId" | "versionId"> & { moduleId?: string }, requestId: string): RequestLog {
  const method = textOf(first(attributes, "http.request.method", "http.method"))!;
  const resource = resourceOf(attributes)!;
  const status = integerOf(first(attributes, "http.response.status_code", "http.status_code"), "http.response.status_code");
  const size = integerOf(first(attributes, "http.response.body.size", "http.response_content_length"), "http.response.body.size");
  const seconds = secondsOf(attributes.get("http.server.request.duration"), "http.server.request.duration");
  const ms = secondsOf(attributes.get("http.server.duration"), "http.server.duration");
  const latency = seconds !== undefined ? BigInt(Math.round(seconds * 1e6)) : ms !== undefined ? BigInt(Math.round(ms * 1000)) : 0n;
  if (latency > end) throw new Error(`the duration (${latency} µs) is longer than the time since 1970`);
  const protocol = textOf(first(attributes, "network.protocol.version", "http.flavor"));
  const referer = attributes.get("http.request.header.referer");
  const refererText = referer?.value.case === "arrayValue" ? textOf(referer.value.value.values[0]) : textOf(referer);
  const log = create(RequestLogSchema, {
    appId: base.appId,
    versionId: base.versionId,
    ...(base.moduleId !== undefined ? { moduleId: base.moduleId } : {}),
    requestId: new TextEncoder().encode(requestId),
    startTime: end - latency,
    endTime: end,
    latency,
    method,
    resource,
    ip: textOf(first(attributes, "client.address", "http.client_ip", "net.sock.peer.addr", "net.peer.ip")) ?? "",
    httpVersion: protocol ? `HTTP/${protocol}` : "",
    status: Number(status ?? 0n),
    responseSize: size ?? 0n,
    urlMapEntry: textOf(attributes.get("http.route")) ?? "",
    combined: "",
    mcycles: 0n,
  });
  const userAgent = textOf(first(attributes, "user_agent.original", "http.user_agent"));
  if (userAgent) log.userAgent = userAgent;
  const host = textOf(first(attributes, "server.address", "net.host.name", "http.host"));
  if (host) log.host = host;
  if (refererText) log.referrer = refererText;
  const user = textOf(attributes.get("enduser.id"));
  if (user) log.nickname = user;
  return log;
}

/** An app line's text: the body (text, or JSON of structured bodies), the event name, and the attributes as JSON. */
function messageOf(record: LogRecord, attributes: Attributes): string {
  const body = textOf(record.body);
  const parts = [body ?? record.eventName];
  if (attributes.size > 0) parts.push(JSON.stringify(Object.fromEntries([...attributes].map(([k, v]) => [k, plain(v)]))));
  return parts.filter((p) => p !== undefined && p !== "").join(" ");
}

/**
 * OpenTelemetry log records as reqlog's records and lines:
 *
 * - The resource names the app, version and module (`mapping`; the token's
 *   one app when the resource has no app attribute).
 * - A record with HTTP server attributes becomes a request record; its
 *   request id is its trace id (hex), or, without one, a hash of the record,
 *   so an export sent again names the same request.
 * - Any other record becomes an app line of the request its trace id names
 *   (the one whose record may come from the same trace), or, without a trace,
 *   of a per-resource request of the hour (`otlp-<resource hash>-<hour>`).
 *
 * A record that cannot be taken is rejected with its place and the reason;
 * the others are kept.
 */
export function otlpLogRecords(request: ExportLogsServiceRequest, mapping: OtlpMapping, defaultApp?: string): OtlpConversion {
  const conversion: OtlpConversion = { records: [], lines: [], rejected: [], total: 0 };
  const groups = new Map<string, OtlpConversion["lines"][number]>();
  request.resourceLogs.forEach((resourceLogs, i) => {
    const resource = attributesOf(resourceLogs.resource?.attributes ?? []);
    const appId = textOf(resource.get(mapping.appAttribute)) ?? defaultApp;
    const versionId = textOf(resource.get(mapping.versionAttribute)) || mapping.defaultVersion;
    const moduleId = mapping.moduleAttribute !== undefined ? textOf(resource.get(mapping.moduleAttribute)) : undefined;
    const resourceKey = createHash("sha256")
      .update(JSON.stringify([...resource].map(([k, v]) => [k, plain(v)]).sort()))
      .digest("hex")
      .slice(0, 16);
    const scopes = [
      ...resourceLogs.scopeLogs.map((s, j) => ({ records: s.logRecords, where: `resource_logs[${i}].scope_logs[${j}]` })),
      ...resourceLogs.instrumentationLibraryLogs.map((s, j) => ({ records: s.logRecords, where: `resource_logs[${i}].instrumentation_library_logs[${j}]` })),
    ];
    for (const scope of scopes) {
      scope.records.forEach((record, k) => {
        conversion.total++;
        const where = `${scope.where}.log_records[${k}]`;
        const reject = (problem: string) => conversion.rejected.push({ where, problem });
        if (appId === undefined || appId === "") {
          reject(`the resource has no ${mapping.appAttribute} attribute to name the app`);
          return;
        }
        const time = timeOf(record);
        if (time === undefined) {
          reject("it has neither time_unix_nano nor observed_time_unix_nano");
          return;
        }
        const attributes = attributesOf(record.attributes);
        const traced = record.traceId.length > 0 && !isZero(record.traceId);
        const isRequest = first(attributes, "http.request.method", "http.method") !== undefined && resourceOf(attributes) !== undefined;
        try {
          if (isRequest) {
            const requestId = traced ? hex(record.traceId) : `otlp-${createHash("sha256").update(appId).update(toBinary(LogRecordSchema, record)).digest("hex").slice(0, 24)}`;
            conversion.records.push({ log: requestRecord(attributes, time, { appId, versionId, moduleId }, requestId), where });
            return;
          }
          // A minute's lines a request: an hour's of a busy service passed what one request may hold (max-request-lines).
          const minute = new Date(Number(time / 1000n)).toISOString().slice(0, 16).replace(/[-T:]/g, "");
          const requestId = traced ? hex(record.traceId) : `otlp-${resourceKey}-${minute}`;
          const key = JSON.stringify([appId, moduleId, versionId, requestId]);
          let group = groups.get(key);
          if (!group) {
            group = {
              request: { appId, versionId, moduleId: moduleId ?? "default", moduleSet: moduleId !== undefined, requestId: new TextEncoder().encode(requestId) },
              lines: [],
            };
            groups.set(key, group);
            conversion.lines.push(group);
          }
          group.lines.push({ time, level: levelOf(record.severityNumber, record.severityText), message: messageOf(record, attributes), where });
        } catch (err) {
          reject(err instanceof Error ? err.message : String(err));
        }
      });
    }
  });
  return conversion;
}

import { create, type DescField, mergeFromBinary, ScalarType } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { type RequestLog, RequestLogSchema } from "../../../../gen/reqlog/v1/log_service_pb.js";
import type { PreparedRecord } from "../../../domain/records.js";
import { formatCombined, plainFields } from "../../../format/combined-line.js";
import { type StringKind, stringKind } from "./strings.js";

/**
 * How a request record is stored in its `requests` row, and read back
 * exactly (every field, set or unset, as written):
 *
 * - repetitive strings by their key in `strings` (strings.ts);
 * - a resource's constant start (its path up to the first id: a run of
 *   letters and digits with a digit, other than v1, v2, …) by its key, the
 *   rest as text (resourceParts);
 * - a dotted IPv4 address as a 32-bit integer (only the canonical form,
 *   which prints back the same), any other `ip` as text;
 * - times by what they add: `end_time` NULL when it is the sort time (a
 *   finished request), `start_time` NULL when it is end_time − latency;
 * - `combined` NULL when it is the line formatCombined derives from the
 *   fields and plainFields holds (so every field appears verbatim in the
 *   line: search-doc.ts and the scan's prefilter rely on it);
 * - fields rarely set (cost, task names, clone key, …) packed in `extras`,
 *   in protobuf's wire format, NULL when there are none.
 */

/** The columns recordValues fills, in its order. */
export const fieldColumns = [
  "ip", "nickname", "start_time", "end_time", "latency", "mcycles", "method", "resource_prefix", "resource", "http_version", "status",
  "response_size", "referrer", "user_agent", "url_map_entry", "host", "combined", "replica_index", "extras",
] as const;

/** Fields with a column (or a place) of their own; the other scalar fields go in `extras`. */
const ownPlace = new Set<string>([
  "app_id", "module_id", "version_id", "request_id", "offset", "line", "finished", ...fieldColumns,
]);
const extraFields: readonly DescField[] = RequestLogSchema.fields.filter((f) => !ownPlace.has(f.name));

/** The strings a row refers to by key, and the kind of each. */
export const stringColumns: readonly [column: (typeof fieldColumns)[number], kind: StringKind][] = [
  ["method", stringKind.method],
  ["http_version", stringKind.httpVersion],
  ["referrer", stringKind.referrer],
  ["user_agent", stringKind.userAgent],
  ["url_map_entry", stringKind.urlMapEntry],
  ["host", stringKind.host],
  ["resource_prefix", stringKind.resourcePrefix],
];

type SqlValue = string | number | bigint | Buffer | null;

const ipv4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;
/** IPv4 addresses are stored offset by 2^31, so each fits SQLite's 4-byte integer. */
export const ipOffset = 2_147_483_648;

/** A record's ip as stored: a bigint (bound as an INTEGER: a JS number would go in as a REAL, in 8 bytes), or text. */
export function ipToSql(ip: string): string | bigint {
  const m = ipv4.exec(ip);
  if (!m) return ip;
  return BigInt(((Number(m[1]) * 256 + Number(m[2])) * 256 + Number(m[3])) * 256 + Number(m[4]) - ipOffset);
}

export function ipFromSql(value: unknown): string {
  if (typeof value === "string") return value;
  const n = Number(value) + ipOffset;
  return `${Math.floor(n / 16_777_216)}.${Math.floor(n / 65_536) % 256}.${Math.floor(n / 256) % 256}.${n % 256}`;
}

/** The `ip` column of `requests r` as the text a record holds, in SQL. */
export const ipTextSql = `CASE WHEN typeof(r.ip) = 'integer' THEN ((r.ip + ${ipOffset}) >> 24) || '.' ||
  (((r.ip + ${ipOffset}) >> 16) & 255) || '.' || (((r.ip + ${ipOffset}) >> 8) & 255) || '.' || ((r.ip + ${ipOffset}) & 255) ELSE r.ip END`;

// The first id in a resource: a run of letters and digits with a digit in it, not a version (v1).
const firstId = /(?<![0-9A-Za-z])(?!v\d+(?![0-9A-Za-z]))[0-9A-Za-z]*\d[0-9A-Za-z]*/;
/** Starts shorter than this are kept with the rest (a key would save nothing). */
const minPrefix = 8;

/**
 * A resource as its constant start and the rest: `/api/v1/repos/alice/app/
 * actions/artifacts/` + `48213/zip`. Requests to one route of one
 * repository share the start; the ids that vary are in the rest.
 */
export function resourceParts(resource: string): { prefix: string; rest: string } {
  const id = firstId.exec(resource);
  const cut = id ? id.index : resource.length;
  if (cut < minPrefix) return { prefix: "", rest: resource };
  return { prefix: resource.slice(0, cut), rest: resource.slice(cut) };
}

/** The `resource` of a row of `requests r`, in SQL: its start's text and the rest. */
export const resourceSql = "coalesce((SELECT text FROM strings WHERE id = r.resource_prefix), '') || r.resource";

/** Whether a proto2 field is set: the message has it as its own property (isFieldSet's check without its cost). */
const has = (log: RequestLog, field: DescField) => Object.hasOwn(log, field.localName);

/** How each scalar type of the rarely set fields is written (wire type and writer method). */
const writes: Partial<Record<ScalarType, [WireType, (w: BinaryWriter, value: never) => BinaryWriter]>> = {
  [ScalarType.BOOL]: [WireType.Varint, (w, v: boolean) => w.bool(v)],
  [ScalarType.INT32]: [WireType.Varint, (w, v: number) => w.int32(v)],
  [ScalarType.INT64]: [WireType.Varint, (w, v: bigint) => w.int64(v)],
  [ScalarType.DOUBLE]: [WireType.Bit64, (w, v: number) => w.double(v)],
  [ScalarType.STRING]: [WireType.LengthDelimited, (w, v: string) => w.string(v)],
  [ScalarType.BYTES]: [WireType.LengthDelimited, (w, v: Uint8Array) => w.bytes(v)],
};

function packExtras(log: RequestLog): Buffer | null {
  let writer: BinaryWriter | undefined;
  for (const field of extraFields) {
    if (field.fieldKind !== "scalar" || !has(log, field)) continue;
    const write = writes[field.scalar];
    if (!write) throw new Error(`cannot pack ${field} in extras`);
    writer ??= new BinaryWriter();
    write[1](writer.tag(field.number, write[0]), log[field.localName as keyof RequestLog] as never);
  }
  if (!writer) return null;
  const bytes = writer.finish();
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Looks up or adds a string's key (strings.ts). */
export type StringKey = (kind: StringKind, text: string) => number;

/**
 * A validated record's values for `fieldColumns`, in order. `finished`
 * records have their end time as sort time (end_time is left NULL).
 */
export function recordValues(record: PreparedRecord, key: StringKey): SqlValue[] {
  const log = record.log;
  const f = RequestLogSchema.field;
  const optionalKey = (field: DescField, kind: StringKind, text: string) => (has(log, field) ? key(kind, text) : null);
  const requiredKey = (kind: StringKind, text: string) => (text === "" ? null : key(kind, text));
  const end = log.endTime;
  const derivedStart = end - log.latency;
  let combined = record.storedCombined ?? null;
  if (combined === null && !plainFields(log)) combined = log.combined;
  const resource = resourceParts(log.resource);
  return [
    ipToSql(log.ip),
    has(log, f.nickname) ? log.nickname : null,
    log.startTime === derivedStart ? null : log.startTime,
    log.finished ? null : end,
    log.latency,
    log.mcycles,
    requiredKey(stringKind.method, log.method),
    requiredKey(stringKind.resourcePrefix, resource.prefix),
    resource.rest,
    requiredKey(stringKind.httpVersion, log.httpVersion),
    log.status,
    log.responseSize,
    optionalKey(f.referrer, stringKind.referrer, log.referrer),
    optionalKey(f.userAgent, stringKind.userAgent, log.userAgent),
    requiredKey(stringKind.urlMapEntry, log.urlMapEntry),
    optionalKey(f.host, stringKind.host, log.host),
    combined,
    has(log, f.replicaIndex) ? log.replicaIndex : null,
    packExtras(log),
  ];
}

/**
 * A RequestLog of a row's identity: app, module (when set), version,
 * request id, and `finished` as written; the same in every schema version.
 */
export function identityOf(row: Record<string, unknown>): RequestLog {
  const log = create(RequestLogSchema, {
    appId: row.app_id as string,
    versionId: row.version_id as string,
    requestId: new Uint8Array(row.request_id as Buffer),
  });
  if (row.module_set !== 0n) log.moduleId = row.module_id as string;
  if (row.finished_set !== null) log.finished = row.finished_set !== 0n;
  return log;
}

/**
 * A request row (read with safeIntegers, joined with its app, version and
 * strings: recordJoin in sql.ts) as a RequestLog without lines.
 */
export function rowToRequestLog(row: Record<string, unknown>): RequestLog {
  const log = identityOf(row);
  const text = (column: string) => (row[`${column}_text`] as string | null) ?? "";
  log.ip = ipFromSql(row.ip);
  if (row.nickname !== null) log.nickname = row.nickname as string;
  log.endTime = (row.end_time as bigint | null) ?? (row.sort_time as bigint);
  log.latency = row.latency as bigint;
  log.startTime = (row.start_time as bigint | null) ?? log.endTime - log.latency;
  log.mcycles = row.mcycles as bigint;
  log.method = text("method");
  log.resource = text("resource_prefix") + (row.resource as string);
  log.httpVersion = text("http_version");
  log.status = Number(row.status);
  log.responseSize = row.response_size as bigint;
  if (row.referrer !== null) log.referrer = text("referrer");
  if (row.user_agent !== null) log.userAgent = text("user_agent");
  log.urlMapEntry = text("url_map_entry");
  if (row.host !== null) log.host = text("host");
  if (row.replica_index !== null) log.replicaIndex = Number(row.replica_index);
  if (row.extras !== null) mergeFromBinary(RequestLogSchema, log, row.extras as Uint8Array);
  log.combined = (row.combined as string | null) ?? formatCombined(log);
  return log;
}

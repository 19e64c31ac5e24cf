import { create, type DescField, ScalarType } from "@bufbuild/protobuf";
import { type RequestLog, RequestLogSchema } from "../../../gen/reqlog/v1/log_service_pb.js";
import { bytesToText, textToBytes } from "./sql-literal.js";

/** A column value as JSONEachRow carries it: 64-bit integers as strings. */
export type ColumnValue = string | number;

/**
 * A version of a request as the `requests` table holds it (migration 001),
 * in the shape JSONEachRow reads and writes: the bookkeeping columns named
 * here, a column per RequestLog field of `fieldColumns` under its proto name,
 * and the other fields in `extra`.
 */
export interface RequestRow {
  app: string;
  /** The request id's bytes as latin1 text (sql-literal.ts). */
  request_id: string;
  rkey: string;
  /** When the request was created (µs): its partition (a day). */
  created_at: string;
  seq: string;
  deleted: number;
  has_record: number;
  finished: number;
  sort_time: string;
  updated_at: string;
  module_id: string;
  version_id: string;
  max_level: number;
  line_count: string;
  line_bytes: string;
  record_bytes: string;
  combined: string;
  /** Which fields the writer set: bit n for the RequestLog field numbered n. */
  set_fields: string;
  /** The set fields that have no column of their own, as JSON ("" when none). */
  extra: string;
  [column: string]: ColumnValue;
}

/**
 * RequestLog fields with a column each: those a Read filters or a
 * statistic may group by. An unset field's column holds the field's
 * default (replica_index -1), so SQL needs no NULL; `set_fields` tells set
 * from unset. Fewer columns mean fewer files per part: ClickHouse 18.16
 * writes two per column for every insert.
 */
const columnNames = new Set([
  "ip", "start_time", "end_time", "latency", "mcycles", "method", "resource", "http_version", "status",
  "response_size", "referrer", "user_agent", "url_map_entry", "host", "replica_index",
]);
/** Fields with columns of their own rules (app, module, version, request id, finished, combined) or kept elsewhere (lines; the offset is made on read). */
const ownRules = new Set(["app_id", "module_id", "version_id", "request_id", "offset", "line", "finished", "combined"]);
const recordFields = RequestLogSchema.fields.filter((f) => f.fieldKind === "scalar" && !ownRules.has(f.name));
export const fieldColumns: readonly DescField[] = recordFields.filter((f) => columnNames.has(f.name));
const extraFields = new Map(recordFields.filter((f) => !columnNames.has(f.name)).map((f) => [f.localName, f]));

const defaults = create(RequestLogSchema) as unknown as Record<string, unknown>;
const bit = (field: DescField) => 1n << BigInt(field.number);
export const moduleSetBit = bit(RequestLogSchema.field.moduleId);
export const finishedSetBit = bit(RequestLogSchema.field.finished);

function scalarOf(field: DescField): ScalarType {
  if (field.fieldKind !== "scalar") throw new Error(`cannot keep ${field.name} in a column`);
  return field.scalar;
}

/** A field's value as a column or JSON holds it: 64-bit integers as text, bytes as latin1 text, booleans as 0/1. */
function stored(field: DescField, value: unknown): ColumnValue {
  const scalar = scalarOf(field);
  if (scalar === ScalarType.BOOL) return value ? 1 : 0;
  if (scalar === ScalarType.BYTES) return bytesToText(value as Uint8Array);
  return typeof value === "bigint" ? String(value) : (value as string | number);
}

/** A field's value from what `stored` made of it. */
function fieldValue(field: DescField, value: ColumnValue): unknown {
  const scalar = scalarOf(field);
  if (scalar === ScalarType.BOOL) return value !== 0;
  if (scalar === ScalarType.BYTES) return textToBytes(value as string);
  if (scalar === ScalarType.STRING) return value;
  // 64-bit integers come as text; 32-bit ones and doubles as numbers.
  return typeof value === "string" ? BigInt(value) : value;
}

const isSet = (log: RequestLog, field: DescField) =>
  log[field.localName as keyof RequestLog] !== undefined && Object.hasOwn(log, field.localName);

/**
 * A record's field columns, `extra` and the bits of `set_fields` for them
 * (module_id's and finished's are the caller's): unset fields at their default.
 */
export function recordColumns(log: RequestLog): Record<string, ColumnValue> & { set_fields: string; extra: string } {
  let bits = 0n;
  const columns: Record<string, ColumnValue> = {};
  for (const field of fieldColumns) {
    const set = isSet(log, field);
    columns[field.name] = stored(field, set ? log[field.localName as keyof RequestLog] : defaults[field.localName]);
    if (set) bits |= bit(field);
  }
  const extra: Record<string, ColumnValue> = {};
  for (const field of extraFields.values()) {
    if (!isSet(log, field)) continue;
    extra[field.localName] = stored(field, log[field.localName as keyof RequestLog]);
    bits |= bit(field);
  }
  return { ...columns, set_fields: String(bits), extra: Object.keys(extra).length === 0 ? "" : JSON.stringify(extra) };
}

const LEGACY_REQUIRED = 3;
const requiredFields = recordFields.filter((f) => f.presence === LEGACY_REQUIRED);

/**
 * The record of a request whose lines came before it (a placeholder): its
 * required fields set at their defaults, starting at its earliest line.
 */
export function placeholderRecord(startTime: bigint): RequestLog {
  const log = create(RequestLogSchema);
  const fields = log as unknown as Record<string, unknown>;
  for (const field of requiredFields) fields[field.localName] = defaults[field.localName];
  log.startTime = startTime;
  return log;
}

/** A stored request as a RequestLog without lines: unset fields stay unset. */
export function rowToLog(row: RequestRow): RequestLog {
  const log = create(RequestLogSchema, { appId: row.app, versionId: row.version_id, requestId: textToBytes(row.request_id) });
  const bits = BigInt(row.set_fields);
  if (bits & moduleSetBit) log.moduleId = row.module_id;
  if (bits & finishedSetBit) log.finished = row.finished === 1;
  const fields = log as unknown as Record<string, unknown>;
  for (const field of fieldColumns) {
    if (bits & bit(field)) fields[field.localName] = fieldValue(field, row[field.name]!);
  }
  if (row.extra !== "") {
    for (const [name, value] of Object.entries(JSON.parse(row.extra) as Record<string, ColumnValue>)) {
      fields[name] = fieldValue(extraFields.get(name)!, value);
    }
  }
  log.combined = row.combined;
  return log;
}

/** The key of a request in maps: app and request id. */
export const requestKey = (app: string, requestId: string) => `${app}\u0000${requestId}`;

import { create, type DescField, ScalarType } from "@bufbuild/protobuf";
import { type RequestLog, RequestLogSchema } from "../../../../gen/reqlog/v1/log_service_pb.js";
import { formatCombined, plainFields } from "../../../format/combined-line.js";
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
  /** The combined line when it is not the one combinedSql derives from the row's columns; else "". */
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
/** Bit 0 (no field is numbered 0): the start time is the end time less the latency (recordColumns). */
const startDerivedBit = 1n;
const endTimeBit = bit(RequestLogSchema.field.endTime);

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
  // Times a record repeats are left out (0), rowToLog and combinedSql put
  // them back: a finished record's end time is its sort time (the writer's
  // rule), and its start time is most often its end time less its latency.
  // Rows stored before keep both (each rule reads them back as they are).
  if (log.finished) columns.end_time = "0";
  if (log.endTime > 0n && log.startTime === log.endTime - log.latency) {
    columns.start_time = "0";
    bits |= startDerivedBit;
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
  if (row.finished === 1 && bits & endTimeBit) log.endTime = BigInt(row.sort_time);
  if (bits & startDerivedBit) log.startTime = log.endTime - log.latency;
  log.combined = row.combined !== "" ? row.combined : formatCombined(log);
  return log;
}

/** 2100-01-01T00:00:00Z in µs: ClickHouse 18.16's DateTime and Date reach 2105. */
const derivableUntil = 4_102_444_800_000_000n;

/**
 * Whether ClickHouse derives a record's combined line from its columns
 * (combinedSql) exactly as formatCombined does: no field needs escaping,
 * no nickname (kept in `extra`), and a time DateTime can hold.
 */
function derivable(log: RequestLog): boolean {
  const time = log.endTime > 0n ? log.endTime : log.startTime;
  return time >= 0n && time < derivableUntil && !log.nickname && plainFields(log);
}

/**
 * The `combined` column of a record: "" when its line is the one
 * formatCombined derives from it (`derived`) and ClickHouse can derive it
 * too (combinedSql), which saves most of a request's bytes on disk.
 */
export function combinedColumn(log: RequestLog, derived: boolean): string {
  return derived && derivable(log) ? "" : log.combined;
}

/** The `combined` column of a placeholder (a request known by its lines), whose line is always derived. */
export const placeholderCombined = (row: RequestRow) => combinedColumn(rowToLog({ ...row, combined: "" }), true);

const months = "['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']";
/** A row's end and start times in SQL (recordColumns leaves them out where they repeat). */
export const endTimeSql = "if(finished = 1, sort_time, end_time)";
export const startTimeSql = `if(bitAnd(set_fields, 1) = 1, ${endTimeSql} - latency, start_time)`;
const lineTime = `toDateTime(intDiv(if(${endTimeSql} > 0, ${endTimeSql}, ${startTimeSql}), 1000000), 'UTC')`;
const orDash = (column: string) => `if(${column} = '', '-', ${column})`;

/** A row's combined line in SQL: the column, or (when "") the line formatCombined derives. */
export const combinedSql = `if(combined != '', combined, concat(
  ${orDash("ip")}, ' - - [', formatDateTime(${lineTime}, '%d/'), ${months}[toMonth(${lineTime})],
  formatDateTime(${lineTime}, '/%Y:%H:%M:%S +0000'), '] "', method, ' ', resource,
  if(http_version = '', '', concat(' ', http_version)), '" ', toString(status), ' ', toString(response_size),
  ' "', ${orDash("referrer")}, '" "', ${orDash("user_agent")}, '"'))`;

/** The key of a request in maps: app and request id. */
export const requestKey = (app: string, requestId: string) => `${app}\u0000${requestId}`;

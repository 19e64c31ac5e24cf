import { create, type DescField, ScalarType } from "@bufbuild/protobuf";
import { type RequestLog, RequestLogSchema } from "../../../gen/reqlog/v1/log_service_pb.js";
import { formatCombined } from "../../format/combined-line.js";

/**
 * RequestLog fields stored one column each, under their proto name. The
 * others are kept elsewhere: app/module/version in `versions`, the request id
 * in the key, `line` in `lines`, `offset` is computed on read, and `finished`
 * and `combined` have columns of their own rules.
 */
const keptElsewhere = new Set(["app_id", "module_id", "version_id", "request_id", "offset", "line", "finished", "combined"]);

export const recordColumns: readonly DescField[] = RequestLogSchema.fields.filter(
  (f) => f.fieldKind === "scalar" && !keptElsewhere.has(f.name),
);

type SqlValue = string | number | bigint | Buffer | null;

/** A field's value as SQLite stores it. */
export function toSql(field: DescField, value: unknown): SqlValue {
  if (field.fieldKind !== "scalar") throw new Error(`cannot store ${field} in a column`);
  switch (field.scalar) {
    case ScalarType.BOOL:
      return value ? 1 : 0;
    case ScalarType.BYTES: {
      const bytes = value as Uint8Array;
      return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    }
    default:
      return value as string | number | bigint;
  }
}

/**
 * The record's values for `recordColumns`, in order: NULL for an unset field.
 * (A proto2 field is set when the message has it as its own property: the
 * check isFieldSet makes, without its cost, which counts at write rates.)
 */
export function recordColumnValues(log: RequestLog): SqlValue[] {
  const values: SqlValue[] = [];
  for (const field of recordColumns) {
    const value = log[field.localName as keyof RequestLog];
    values.push(value !== undefined && Object.hasOwn(log, field.localName) ? toSql(field, value) : null);
  }
  return values;
}

/** A column's value (read with safeIntegers) as the message field holds it. */
export function fromSql(field: DescField, value: SqlValue): unknown {
  if (field.fieldKind !== "scalar") throw new Error(`cannot read ${field} from a column`);
  switch (field.scalar) {
    case ScalarType.BOOL:
      return value !== 0n && value !== 0;
    case ScalarType.BYTES:
      return new Uint8Array(value as Buffer);
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return Number(value);
    default:
      return value;
  }
}

/**
 * A request row (read with safeIntegers, joined with its app and version) as
 * a RequestLog without lines: unset optional fields stay unset, and a NULL
 * `combined` is derived from the fields again.
 */
export function rowToRequestLog(row: Record<string, unknown>): RequestLog {
  const log = create(RequestLogSchema, {
    appId: row.app_id as string,
    versionId: row.version_id as string,
    requestId: new Uint8Array(row.request_id as Buffer),
  });
  if (row.module_set !== 0n) log.moduleId = row.module_id as string;
  if (row.finished_set !== null) log.finished = row.finished_set !== 0n;
  for (const field of recordColumns) {
    const value = row[field.name] as SqlValue;
    if (value !== null) (log as unknown as Record<string, unknown>)[field.localName] = fromSql(field, value);
  }
  log.combined = (row.combined as string | null) ?? formatCombined(log);
  return log;
}

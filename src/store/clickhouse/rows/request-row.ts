import { create, type DescField, ScalarType } from "@bufbuild/protobuf";
import { type RequestLog, RequestLogSchema } from "../../../../gen/reqlog/v1/log_service_pb.js";
import { formatCombined, plainFields } from "../../../format/combined-line.js";
import { columnNames as requestsColumns } from "../migrations/001-init.js";
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
/** moduleSetBit and finishedSetBit as numbers (recordColumns' `moreBits`). */
export const moduleSetFlag = Number(moduleSetBit);
export const finishedSetFlag = Number(finishedSetBit);
const endTimeBit = bit(RequestLogSchema.field.endTime);

function scalarOf(field: DescField): ScalarType {
  if (field.fieldKind !== "scalar") throw new Error(`cannot keep ${field.name} in a column`);
  return field.scalar;
}

/** Doubles JSON cannot hold (it writes null for the first three and 0 for -0): kept as their text. */
const unjsonable = (value: number) => !Number.isFinite(value) || Object.is(value, -0);

/**
 * A field's value as a column or JSON holds it: 64-bit integers as text,
 * bytes as latin1 text, booleans as 0/1, doubles as numbers but Infinity,
 * -Infinity, NaN and -0 as text.
 */
function stored(field: DescField, value: unknown): ColumnValue {
  const scalar = scalarOf(field);
  if (scalar === ScalarType.BOOL) return value ? 1 : 0;
  if (scalar === ScalarType.BYTES) return bytesToText(value as Uint8Array);
  if ((scalar === ScalarType.DOUBLE || scalar === ScalarType.FLOAT) && unjsonable(value as number)) return Object.is(value, -0) ? "-0" : String(value);
  return typeof value === "bigint" ? String(value) : (value as string | number);
}

/** A field's value from what `stored` made of it. */
function fieldValue(field: DescField, value: ColumnValue): unknown {
  const scalar = scalarOf(field);
  if (scalar === ScalarType.BOOL) return value !== 0;
  if (scalar === ScalarType.BYTES) return textToBytes(value as string);
  if (scalar === ScalarType.STRING) return value;
  if (scalar === ScalarType.DOUBLE || scalar === ScalarType.FLOAT) return Number(value);
  // 64-bit integers come as text; 32-bit ones and doubles as numbers.
  return typeof value === "string" ? BigInt(value) : value;
}

/** The columns of a record's fields (`fieldColumns`), as recordColumns fills them. */
export interface FieldColumns {
  ip: string;
  start_time: string;
  end_time: string;
  latency: string;
  mcycles: string;
  method: string;
  resource: string;
  http_version: string;
  status: number;
  response_size: string;
  referrer: string;
  user_agent: string;
  url_map_entry: string;
  host: string;
  replica_index: number;
}

/**
 * Each column field's and extra field's name and bit of `set_fields`, as a
 * number (field numbers stay below 53: exact in a double, no BigInt a
 * record), looked up by the own properties a record has (proto2 presence).
 */
const setBits: readonly [name: string, bit: number][] = [...fieldColumns, ...extraFields.values()].map((f) => [f.localName, 2 ** f.number]);
if (RequestLogSchema.fields.some((f) => f.number >= 53)) throw new Error("set_fields' bits are kept in a double: field numbers must stay below 53");

/**
 * The bits of `set_fields` for a record's column and extra fields (proto2
 * presence: an own property, not undefined), plus `moreBits` (module_id's
 * and finished's are the caller's) and bit 0 when its start time is left
 * out (startDerived). A number: field numbers stay below 53.
 */
export function recordSetFields(log: RequestLog, moreBits = 0): number {
  let bits = moreBits;
  const fields = log as unknown as Record<string, unknown>;
  for (const [name, value] of setBits) {
    if (Object.hasOwn(log, name) && fields[name] !== undefined) bits += value;
  }
  return startDerived(log) ? bits + startDerivedFlag : bits;
}

/**
 * Times a record repeats are left out (0), rowToLog and combinedSql put
 * them back: a finished record's end time is its sort time (the writer's
 * rule), and its start time is most often its end time less its latency.
 * Rows stored before keep both (each rule reads them back as they are).
 */
const startDerived = (log: RequestLog) => log.endTime > 0n && log.startTime === log.endTime - log.latency;
const startDerivedFlag = Number(startDerivedBit);
/** Whether recordSetFields' bits leave the start time out. */
export const startLeftOut = (bits: number) => bits % 2 === 1;

/** A record's `extra` column: its set fields without a column of their own, as JSON ("" when none). */
export function recordExtra(log: RequestLog): string {
  const fields = log as unknown as Record<string, unknown>;
  for (const name of extraFields.keys()) {
    if (Object.hasOwn(log, name) && fields[name] !== undefined) return extraJson(log);
  }
  return "";
}

/**
 * A record's field columns, `extra` and the bits of `set_fields` for them
 * (module_id's and finished's are the caller's, `moreBits`): unset fields at their
 * default (the prototype's value, as reading them gives). The writer's
 * rows write the same columns out inline (request-writer.ts writeRecord).
 */
export function recordColumns(log: RequestLog, moreBits = 0): FieldColumns & { set_fields: string; extra: string } {
  const bits = recordSetFields(log, moreBits);
  return {
    ip: log.ip,
    start_time: startLeftOut(bits) ? "0" : String(log.startTime),
    end_time: log.finished ? "0" : String(log.endTime),
    latency: String(log.latency),
    mcycles: String(log.mcycles),
    method: log.method,
    resource: log.resource,
    http_version: log.httpVersion,
    status: log.status,
    response_size: String(log.responseSize),
    referrer: log.referrer,
    user_agent: log.userAgent,
    url_map_entry: log.urlMapEntry,
    host: log.host,
    replica_index: log.replicaIndex,
    set_fields: String(bits),
    extra: recordExtra(log),
  };
}

const isSet = (log: RequestLog, field: DescField) =>
  log[field.localName as keyof RequestLog] !== undefined && Object.hasOwn(log, field.localName);

/** The set fields that have no column of their own, as JSON. */
function extraJson(log: RequestLog): string {
  const extra: Record<string, ColumnValue> = {};
  for (const field of extraFields.values()) {
    if (isSet(log, field)) extra[field.localName] = stored(field, log[field.localName as keyof RequestLog]);
  }
  return JSON.stringify(extra);
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

/**
 * Migration 006 (the column diet) stores two columns of \`requests\` in a
 * narrower form. Both forms read the same, so rows written before 006 (or
 * by a server of an older build) need no rewrite.
 *
 * - \`rkey\` is 0 when it equals \`seq\` (a request's first version: every
 *   request written once), set by the requests' view; request_changes and
 *   the tables its other views fill keep it whole.
 * - \`ip\`: a canonical dotted IPv4 address (the text IPv4NumToString
 *   gives back) is 5 characters: 0x01 + its top 4 bits, then 4 groups of 7
 *   bits (0x00–0x7F, so every byte stays one UTF-8 byte and JSON carries
 *   it), where its text took 7–15. Any other text (IPv6, kept as written:
 *   FixedString(16) would not give back its exact text) is kept as it is,
 *   behind 0x1F when it starts with a control character (so that no text
 *   reads as an address). 18.16 cannot rename a column or add one IF NOT
 *   EXISTS, and the column set of \`requests\` stays that of 001 (a
 *   database's rows copy into another's with SELECT *): hence a form inside
 *   the String column, not a UInt32 beside it.
 *
 * They are read back in one place: \`requestsRead\` (below), through which
 * every statement reads \`requests\`, selects each column as written under
 * its own name. So every expression over a request's columns (combinedSql,
 * the filters, the search index's terms) is written over the names alone,
 * and means the same over \`request_changes\` (which holds every value
 * whole) and over \`requestsRead\`.
 */
const ipEscape = "\x1f";

/** \`ip\` as requests stores it (the writer's side of \`storedForms.ip\`). */
export function storedIp(ip: string): string {
  const n = dottedIpv4(ip);
  if (n >= 0) return String.fromCharCode(1 + Math.floor(n / 2 ** 28), (n >>> 21) & 127, (n >>> 14) & 127, (n >>> 7) & 127, n & 127);
  return ip !== "" && ip.charCodeAt(0) < 0x20 ? ipEscape + ip : ip;
}

/**
 * A canonical dotted IPv4 address's number (4 parts, each 0 or 1–3 digits
 * without a leading zero, below 256); -1 for any other text. Read character
 * by character: it runs for every record stored (a split, a regex a part
 * and a reduce took ~1 µs).
 */
function dottedIpv4(ip: string): number {
  let n = 0;
  let part = 0;
  let digits = 0;
  let parts = 0;
  for (let i = 0; i <= ip.length; i++) {
    const c = i < ip.length ? ip.charCodeAt(i) : 0x2e;
    if (c === 0x2e /* . */) {
      if (digits === 0 || part > 255 || ++parts > 4) return -1;
      n = n * 256 + part;
      part = 0;
      digits = 0;
    } else if (c >= 0x30 && c <= 0x39) {
      if ((digits > 0 && part === 0) || ++digits > 3) return -1;
      part = part * 10 + (c - 0x30);
    } else {
      return -1;
    }
  }
  return parts === 4 ? n : -1;
}

/** How the requests' view stores rkey (migration 006). */
export const storedRkeySql = "if(rkey = seq, toUInt64(0), rkey)";

/**
 * Methods and HTTP versions \`requests\` keeps as a one-character code
 * since migration 007: the character 0x10 + the value's index here (at most
 * 15 a column; the lists may only grow, at their ends). Any other text is
 * kept as it is, behind 0x1F when it starts with a control character (so
 * that no text reads as a code). Set by the requests' view (SQL), with bit
 * 62 of \`set_fields\` (\`codedFlag\`: field numbers stay below 53) on
 * the rows it stores so: rows stored before keep their texts, which read as
 * they are whatever they hold. request_changes and what its other views
 * read keep the texts.
 */
export const codedValues = {
  method: ["GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "CONNECT", "TRACE"],
  http_version: ["HTTP/1.1", "HTTP/2.0", "HTTP/1.0", "HTTP/2", "HTTP/3", "HTTP/0.9"],
} as const;
type CodedColumn = keyof typeof codedValues;
const codedFlag = "toUInt64(4611686018427387904)";
const sqlArray = (values: readonly string[]) => `[${values.map((v) => `'${v}'`).join(", ")}]`;
const codes = (column: CodedColumn) => sqlArray(codedValues[column].map((_, i) => `\\x${(0x10 + i).toString(16)}`));

/** How the requests' view stores a coded column (migration 007). */
const storedCodeSql = (column: CodedColumn) =>
  `transform(${column}, ${sqlArray(codedValues[column])}, ${codes(column)},
    if(${column} != '' AND substring(${column}, 1, 1) < '\\x20', concat('\\x1f', ${column}), ${column}))`;

/** What the requests' view makes of each column of request_changes (migrations 006 and 007): every other column is stored as it is. */
export const storedColumnSql: Readonly<Record<string, string>> = {
  rkey: storedRkeySql,
  method: storedCodeSql("method"),
  http_version: storedCodeSql("http_version"),
  set_fields: `bitOr(set_fields, ${codedFlag})`,
};

/** A coded column's text, from what \`requests\` holds (set_fields, as stored, tells the two forms apart). */
const codedReadSql = (column: CodedColumn) =>
  `if(bitAnd(set_fields, ${codedFlag}) = 0, ${column},
    transform(${column}, ${codes(column)}, ${sqlArray(codedValues[column])}, if(substring(${column}, 1, 1) = '\\x1f', substring(${column}, 2), ${column})))`;

const ipByte = (at: number) => `reinterpretAsUInt8(substring(ip, ${at}, 1))`;
/** The value as written of each column \`requests\` keeps in a form of its own: SQL over the stored column of that name. */
const storedForms: Record<string, string> = {
  rkey: "if(rkey = 0, seq, rkey)",
  ip: `if(length(ip) = 5 AND ip >= '\\x01' AND ip < '\\x11',
  IPv4NumToString(toUInt32((${ipByte(1)} - 1) * 268435456 + ${ipByte(2)} * 2097152 + ${ipByte(3)} * 16384 + ${ipByte(4)} * 128 + ${ipByte(5)})),
  if(substring(ip, 1, 1) = '\\x1f', substring(ip, 2), ip))`,
  method: codedReadSql("method"),
  http_version: codedReadSql("http_version"),
};

/** A column's value as written, in SQL over the stored columns (what requestsRead selects under its name; a test's rows as an older build stored them). */
export const readBackSql = (column: string) => storedForms[column] ?? column;

/** Every column of \`requests\`, as written, under its own name (an alias named after the column it reads: the stored one). */
export const requestColumnsSql = requestsColumns.map((c) => (c in storedForms ? `${storedForms[c]} AS ${c}` : c)).join(", ");

/**
 * A statement reading \`requests\` row by row: \`rest\` is what follows
 * \`FROM requests\` (FINAL, PREWHERE, WHERE, ORDER BY, LIMIT), where every
 * column's name stands for its value as written (ClickHouse resolves a name
 * to the SELECT's alias first, in every clause). Its rows are RequestRows.
 */
export const selectRequests = (rest: string) => `SELECT ${requestColumnsSql} FROM requests ${rest}`;

/**
 * \`requests\` as a table of the values as written: a subquery to read from
 * (\`rest\` as in selectRequests). ClickHouse reads only the columns the
 * outer query uses (and derives only those).
 */
export const requestsRead = (rest: string) => `(${selectRequests(rest)})`;

/** String literals, which may hold any text: left out of storedFormsIn's test. */
const literals = /'(?:[^'\\]|\\.)*'/g;
const storedFormNames = new RegExp(`\\b(${Object.keys(storedForms).join("|")})\\b`);

/** Whether a piece of SQL names a column \`requests\` keeps in a form of its own. */
export const storedFormsIn = (text: string) => storedFormNames.test(text.replace(literals, "''"));

/**
 * A statement reading only columns \`requests\` stores as written (app,
 * request_id, seq, sort_time, created_at, deleted, …) from the table itself:
 * an aggregate over them (count, max) is then computed where the rows are
 * (on a cluster, by each shard). Throws when \`select\` or \`rest\` name a
 * column with a stored form: those read through requestsRead.
 */
export function selectStoredAsWritten(select: string, rest: string): string {
  if (storedFormsIn(select) || storedFormsIn(rest)) throw new Error(`a statement over requests names a stored form outside requestsRead: ${select} ${rest}`);
  return `SELECT ${select} FROM requests ${rest}`;
}

/** A mutation's condition on \`requests\` (ALTER … DELETE reads no subquery): the requests whose key is in \`list\`. */
export const rkeyInMutation = (list: string) => `${storedForms.rkey} IN ${list}`;

const months = "['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']";
/** A row's end and start times in SQL (recordColumns leaves them out where they repeat). */
export const endTimeSql = "if(finished = 1, sort_time, end_time)";
export const startTimeSql = `if(bitAnd(set_fields, 1) = 1, ${endTimeSql} - latency, start_time)`;
const lineTime = `toDateTime(intDiv(if(${endTimeSql} > 0, ${endTimeSql}, ${startTimeSql}), 1000000), 'UTC')`;
const orDash = (column: string) => `if(${column} = '', '-', ${column})`;

/**
 * A row's combined line in SQL: the column, or (when "") the line
 * formatCombined derives; `head: false` leaves out the derived line's
 * address, identity and time, up to the two characters before its first
 * quote (`] "…`), for a search of text that cannot lie in them
 * (plan-sql.ts). Decoding the stored address (IPv4NumToString) and
 * formatting the time cost most of deriving a line on a scan.
 */
export const combinedLineSql = ({ head }: { head: boolean }) => `if(combined != '', combined, concat(
  ${head ? `${orDash("ip")}, ' - - [', formatDateTime(${lineTime}, '%d/'), ${months}[toMonth(${lineTime})],
  formatDateTime(${lineTime}, '/%Y:%H:%M:%S +0000'), ` : ""}'] "', method, ' ', resource,
  if(http_version = '', '', concat(' ', http_version)), '" ', toString(status), ' ', toString(response_size),
  ' "', ${orDash("referrer")}, '" "', ${orDash("user_agent")}, '"'))`;

/** A row's combined line in SQL: the column, or (when "") the line formatCombined derives. */
export const combinedSql = combinedLineSql({ head: true });

/** The key of a request in maps: app and request id. */
export const requestKey = (app: string, requestId: string) => `${app}\u0000${requestId}`;

/**
 * The wire bytes of the records and lines the middleware captures, written
 * straight into a buffer. protobuf-es builds and encodes a RequestLog with
 * three lines in about 30 µs on the machines this was measured on: more
 * than a hello-world request costs its server, which would make the
 * middleware its app's main cost (docs/benchmarks.md). This writes the same
 * bytes (test/sdk/record-encoder.property.test.ts checks them against
 * protobuf-es for arbitrary records) for the few message shapes the SDK
 * sends, in about a tenth of the time. Records given as messages by the
 * app still go through protobuf-es (see batching-logger.ts).
 */

/** A request as the middleware captured it: times in µs since the epoch, as numbers (exact below 2^53). */
export interface CapturedRecord {
  requestId: string;
  startTime: number;
  /** 0 while in progress. */
  endTime: number;
  method: string;
  resource: string;
  httpVersion: string;
  status: number;
  responseSize: number;
  ip: string;
  userAgent: string;
  referrer: string;
  host: string;
  urlMapEntry: string;
  finished: boolean;
  wasLoadingRequest: boolean;
  lines: readonly CapturedLine[];
}

export interface CapturedLine {
  /** µs since the epoch. */
  time: number;
  /** 0 DEBUG … 4 CRITICAL. */
  level: number;
  message: string;
}

/** Who every record is written for. */
export interface RecordIdentity {
  appId: string;
  moduleId: string;
  versionId: string;
  /** The instance, as bytes (RequestLog.clone_key). */
  cloneKey: Uint8Array;
}

/** A field of an IngestRequest, encoded: its value's length and bytes, ready to follow the field's tag. */
export interface EncodedEntry {
  /** IngestRequest.log (2) or IngestRequest.lines (3). */
  field: 2 | 3;
  /** The length-delimited value: varint length, then the message. */
  data: Uint8Array;
  /** 1 for a record, 0 for lines without their record. */
  record: 0 | 1;
  lines: number;
}

const LEN = 2;
const VARINT = 0;

/** One reusable scratch buffer, grown as needed; entries are copied out of it. */
let buf = Buffer.allocUnsafe(64 * 1024);
let pos = 0;

function ensure(more: number): void {
  if (pos + more <= buf.length) return;
  const bigger = Buffer.allocUnsafe(Math.max(buf.length * 2, pos + more));
  buf.copy(bigger, 0, 0, pos);
  buf = bigger;
}

/**
 * A varint of an integer from 0 to 2^53 (numbers, so no 32-bit operators
 * past 2^31). Every number the SDK captures is one (times, sizes, statuses,
 * levels); anything else would be a bug, written as 0 rather than as bytes
 * that break the message.
 */
function varint(v: number): void {
  if (!(v >= 0 && v <= Number.MAX_SAFE_INTEGER)) v = 0;
  while (v >= 128) {
    buf[pos++] = (v % 128) + 128;
    v = Math.floor(v / 128);
  }
  buf[pos++] = v;
}

function varintLength(v: number): number {
  let n = 1;
  while (v >= 128) {
    v = Math.floor(v / 128);
    n++;
  }
  return n;
}

function tag(field: number, wireType: number): void {
  varint(field * 8 + wireType);
}

function string(field: number, s: string): void {
  // Up to 42 UTF-16 units are at most 126 bytes: a one-byte length, written before the text.
  if (s.length <= 42) {
    ensure(3 + s.length * 3);
    tag(field, LEN);
    // Short ASCII text is copied here: cheaper than a call into Buffer#write.
    let i = 0;
    for (; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) break;
      buf[pos + 1 + i] = c;
    }
    const n = i === s.length ? i : buf.write(s, pos + 1, "utf8");
    buf[pos] = n;
    pos += 1 + n;
    return;
  }
  const n = Buffer.byteLength(s, "utf8");
  ensure(12 + n);
  tag(field, LEN);
  varint(n);
  pos += buf.write(s, pos, "utf8");
}

function bytes(field: number, b: Uint8Array): void {
  ensure(12 + b.length);
  tag(field, LEN);
  varint(b.length);
  buf.set(b, pos);
  pos += b.length;
}

function number(field: number, v: number): void {
  ensure(12);
  tag(field, VARINT);
  varint(v);
}

/** A nested line: LogLine {time 1, level 2, log_message 3} or UserAppLogLine {timestamp_usec 1, level 2, message 3}. */
function line(field: number, l: CapturedLine): void {
  const messageBytes = Buffer.byteLength(l.message, "utf8");
  const length = 1 + varintLength(l.time) + 2 + 1 + varintLength(messageBytes) + messageBytes;
  ensure(20 + length);
  tag(field, LEN);
  varint(length);
  number(1, l.time);
  number(2, l.level);
  tag(3, LEN);
  varint(messageBytes);
  pos += buf.write(l.message, pos, "utf8");
}

/** Copies what was written since `start` out as a length-delimited value. */
function take(start: number): Uint8Array {
  const length = pos - start;
  const out = Buffer.allocUnsafe(varintLength(length) + length);
  let p = 0;
  let v = length;
  while (v >= 128) {
    out[p++] = (v % 128) + 128;
    v = Math.floor(v / 128);
  }
  out[p++] = v;
  buf.copy(out, p, start, pos);
  return out;
}

/** The fields every record (or line group) of a client starts with, encoded once per client and shape. */
const prefixes = new WeakMap<RecordIdentity, { record: Uint8Array; lines: Uint8Array }>();

function prefixOf(id: RecordIdentity): { record: Uint8Array; lines: Uint8Array } {
  let prefix = prefixes.get(id);
  if (!prefix) {
    const encode = (fields: () => void) => {
      pos = 0;
      fields();
      return Uint8Array.from(buf.subarray(0, pos));
    };
    prefix = {
      // RequestLog: app_id 1, module_id 37, version_id 2, clone_key 28.
      record: encode(() => {
        string(1, id.appId);
        string(37, id.moduleId);
        string(2, id.versionId);
        bytes(28, id.cloneKey);
      }),
      // RequestLines: app_id 1, module_id 2, version_id 3.
      lines: encode(() => {
        string(1, id.appId);
        string(2, id.moduleId);
        string(3, id.versionId);
      }),
    };
    prefixes.set(id, prefix);
  }
  return prefix;
}

function raw(b: Uint8Array): void {
  ensure(b.length);
  buf.set(b, pos);
  pos += b.length;
}

/** A captured request as RequestLog bytes: every required field set (0 and "" where the service derives them). */
export function encodeRecord(id: RecordIdentity, r: CapturedRecord): EncodedEntry {
  const prefix = prefixOf(id).record;
  pos = 0;
  raw(prefix);
  string(3, r.requestId);
  string(4, r.ip);
  number(6, r.startTime);
  number(7, r.endTime);
  number(8, r.endTime > r.startTime ? r.endTime - r.startTime : 0);
  number(9, 0);
  string(10, r.method);
  string(11, r.resource);
  string(12, r.httpVersion);
  number(13, r.status);
  number(14, r.responseSize);
  if (r.referrer !== "") string(15, r.referrer);
  if (r.userAgent !== "") string(16, r.userAgent);
  string(17, r.urlMapEntry);
  string(18, "");
  if (r.host !== "") string(20, r.host);
  if (r.wasLoadingRequest) number(24, 1);
  if (!r.finished) number(27, 0);
  for (const l of r.lines) line(29, l);
  return { field: 2, data: take(0), record: 1, lines: r.lines.length };
}

/** App lines of a request without its record, as RequestLines bytes. */
export function encodeLines(id: RecordIdentity, requestId: string, lines: readonly CapturedLine[]): EncodedEntry {
  const prefix = prefixOf(id).lines;
  pos = 0;
  raw(prefix);
  string(4, requestId);
  for (const l of lines) line(5, l);
  return { field: 3, data: take(0), record: 0, lines: lines.length };
}

import type { AppLine } from "../../../domain/records.js";

/**
 * A request's app lines packed into one BLOB of its row, instead of a row
 * each in a table keyed by the message text: no key, no index, and a time
 * costs one or two bytes. Lines are kept in the order Read returns them
 * (time, position in their flush, level, message bytes); a line is stored
 * once however often it is sent.
 *
 * Layout, per line: zigzag varint of its time minus the previous line's
 * (the first: minus 0), varint of pos × 8 + level, varint of the message's
 * UTF-8 length, the message.
 */

const textDecoder = new TextDecoder("utf-8", { fatal: true });
/** Times below this are exact as JS numbers (µs since 1970 until the year 2255). */
const exact = 2n ** 53n;

/** The order lines are stored and read in: SQLite's BINARY order of (time, pos, level, message) before this format. */
function compareLines(a: AppLine, b: AppLine): number {
  if (a.time !== b.time) return a.time < b.time ? -1 : 1;
  if (a.pos !== b.pos) return a.pos - b.pos;
  if (a.level !== b.level) return a.level - b.level;
  return Buffer.compare(Buffer.from(a.message, "utf8"), Buffer.from(b.message, "utf8"));
}

function inOrder(lines: readonly AppLine[]): boolean {
  for (let i = 1; i < lines.length; i++) if (compareLines(lines[i - 1]!, lines[i]!) > 0) return false;
  return true;
}

/** Bytes of a varint of a non-negative number below 2^53. */
function varintSize(v: number): number {
  let n = 1;
  while (v >= 128) {
    v = Math.floor(v / 128);
    n++;
  }
  return n;
}

function writeVarint(buf: Buffer, at: number, v: number): number {
  while (v >= 128) {
    buf[at++] = (v % 128) | 0x80;
    v = Math.floor(v / 128);
  }
  buf[at++] = v;
  return at;
}

function writeBigVarint(buf: Buffer, at: number, value: bigint): number {
  let v = value;
  while (v >= 0x80n) {
    buf[at++] = Number(v & 0x7fn) | 0x80;
    v >>= 7n;
  }
  buf[at++] = Number(v);
  return at;
}

const zigzag = (v: bigint) => (v >= 0n ? v << 1n : ((-v) << 1n) - 1n);
const unzigzag = (v: bigint) => (v & 1n ? -((v + 1n) >> 1n) : v >> 1n);

/** Lines already in order, packed. */
function encodeSorted(lines: readonly AppLine[]): Buffer {
  const sizes = lines.map((l) => Buffer.byteLength(l.message, "utf8"));
  let total = 0;
  for (let i = 0; i < lines.length; i++) total += 10 + 5 + varintSize(sizes[i]!) + sizes[i]!;
  const buf = Buffer.allocUnsafe(total);
  let at = 0;
  let previous = 0n;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const delta = zigzag(line.time - previous);
    at = delta < exact ? writeVarint(buf, at, Number(delta)) : writeBigVarint(buf, at, delta);
    previous = line.time;
    at = writeVarint(buf, at, line.pos * 8 + line.level);
    at = writeVarint(buf, at, sizes[i]!);
    at += buf.write(line.message, at, "utf8");
  }
  return buf.subarray(0, at);
}

/** A request's stored lines, in order. */
export function decodeLines(blob: Uint8Array | null | undefined): AppLine[] {
  if (!blob || blob.length === 0) return [];
  const lines: AppLine[] = [];
  let i = 0;
  const small = (): number => {
    let v = 0;
    let scale = 1;
    for (;;) {
      const b = blob[i++];
      if (b === undefined) throw new Error("cannot read stored app lines: the blob ends inside a number");
      v += (b & 0x7f) * scale;
      if (b < 0x80) return v;
      scale *= 128;
    }
  };
  const big = (): bigint => {
    let shift = 0n;
    let v = 0n;
    for (;;) {
      const b = blob[i++];
      if (b === undefined) throw new Error("cannot read stored app lines: the blob ends inside a number");
      v |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return v;
      shift += 7n;
    }
  };
  let time = 0n;
  while (i < blob.length) {
    // A delta of up to 7 bytes is below 2^49: exact as a number.
    let end = i;
    while (end < blob.length && blob[end]! >= 0x80) end++;
    time += unzigzag(end - i < 7 ? BigInt(small()) : big());
    const posLevel = small();
    const length = small();
    const message = textDecoder.decode(blob.subarray(i, i + length));
    i += length;
    lines.push({ time, pos: Math.floor(posLevel / 8), level: posLevel % 8, message });
  }
  return lines;
}

/** Lines of one request packed (sorted; a line given twice is stored once). */
export function encodeLines(lines: readonly AppLine[]): Buffer | null {
  return mergeLines(null, lines).blob;
}

/**
 * Adds `lines` to a stored blob: those not stored yet go in, in order.
 * Returns the new blob (null when there are no lines) and the lines that
 * were new.
 */
export function mergeLines(blob: Uint8Array | null | undefined, lines: readonly AppLine[]): { blob: Buffer | null; added: AppLine[] } {
  const stored = decodeLines(blob);
  let added: AppLine[];
  if (stored.length === 0 && new Set(lines.map((l) => l.pos)).size === lines.length) {
    // The lines of one flush differ by position: with none stored, all are new.
    added = [...lines];
  } else {
    const seen = new Set(stored.map((l) => `${l.time}/${l.pos}/${l.level}/${l.message}`));
    added = [];
    for (const line of lines) {
      const key = `${line.time}/${line.pos}/${line.level}/${line.message}`;
      if (seen.has(key)) continue;
      seen.add(key);
      added.push(line);
    }
  }
  if (stored.length === 0 && added.length === 0) return { blob: null, added };
  if (added.length === 0) return { blob: Buffer.from(blob!.buffer, blob!.byteOffset, blob!.byteLength), added };
  const all = stored.length === 0 ? added : [...stored, ...added];
  return { blob: encodeSorted(inOrder(all) ? all : [...all].sort(compareLines)), added };
}

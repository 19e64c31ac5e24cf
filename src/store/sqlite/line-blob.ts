import type { AppLine } from "../../domain/records.js";

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

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder("utf-8", { fatal: true });

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  return Buffer.compare(a, b);
}

interface EncodedLine extends AppLine {
  bytes: Uint8Array;
}

/** The order lines are stored and read in: SQLite's BINARY order of (time, pos, level, message) before this format. */
function compareLines(a: EncodedLine, b: EncodedLine): number {
  if (a.time !== b.time) return a.time < b.time ? -1 : 1;
  if (a.pos !== b.pos) return a.pos - b.pos;
  if (a.level !== b.level) return a.level - b.level;
  return compareBytes(a.bytes, b.bytes);
}

class Writer {
  private buf = Buffer.allocUnsafe(256);
  length = 0;

  private room(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.length + n));
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
  }

  varint(value: bigint): void {
    this.room(10);
    let v = value;
    while (v >= 0x80n) {
      this.buf[this.length++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    this.buf[this.length++] = Number(v);
  }

  small(value: number): void {
    // Numbers below 2^31 (positions, levels, lengths) without BigInt.
    this.room(5);
    let v = value >>> 0;
    while (v >= 0x80) {
      this.buf[this.length++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    this.buf[this.length++] = v;
  }

  bytes(b: Uint8Array): void {
    this.room(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
  }

  done(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}

const zigzag = (v: bigint) => (v >= 0n ? v << 1n : ((-v) << 1n) - 1n);
const unzigzag = (v: bigint) => (v & 1n ? -((v + 1n) >> 1n) : v >> 1n);

function encodeSorted(lines: readonly EncodedLine[]): Buffer {
  const w = new Writer();
  let previous = 0n;
  for (const line of lines) {
    w.varint(zigzag(line.time - previous));
    previous = line.time;
    w.small(line.pos * 8 + line.level);
    w.small(line.bytes.length);
    w.bytes(line.bytes);
  }
  return w.done();
}

function decodeEncoded(blob: Uint8Array | null | undefined): EncodedLine[] {
  if (!blob || blob.length === 0) return [];
  const lines: EncodedLine[] = [];
  let i = 0;
  const varint = (): bigint => {
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
  const small = (): number => {
    let shift = 0;
    let v = 0;
    for (;;) {
      const b = blob[i++];
      if (b === undefined) throw new Error("cannot read stored app lines: the blob ends inside a number");
      v += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return v;
      shift += 7;
    }
  };
  let time = 0n;
  while (i < blob.length) {
    time += unzigzag(varint());
    const posLevel = small();
    const length = small();
    const bytes = blob.subarray(i, i + length);
    i += length;
    lines.push({ time, pos: Math.floor(posLevel / 8), level: posLevel % 8, message: "", bytes });
  }
  return lines;
}

/** A request's stored lines, in order. */
export function decodeLines(blob: Uint8Array | null | undefined): AppLine[] {
  return decodeEncoded(blob).map((l) => ({ time: l.time, pos: l.pos, level: l.level, message: textDecoder.decode(l.bytes) }));
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
  const all = decodeEncoded(blob);
  const incoming = lines.map((line): EncodedLine => ({ ...line, bytes: textEncoder.encode(line.message) }));
  let added: AppLine[];
  if (all.length === 0 && new Set(lines.map((l) => l.pos)).size === lines.length) {
    // The lines of one flush differ by position: with none stored, all are new.
    added = [...lines];
    all.push(...incoming);
  } else {
    // Stored lines by (time, pos, level), then compared by their bytes.
    const stored = new Map<string, Uint8Array[]>();
    const slot = (l: EncodedLine) => `${l.time}/${l.pos}/${l.level}`;
    for (const l of all) {
      const list = stored.get(slot(l));
      if (list) list.push(l.bytes);
      else stored.set(slot(l), [l.bytes]);
    }
    added = [];
    incoming.forEach((l, i) => {
      const list = stored.get(slot(l));
      if (list?.some((b) => compareBytes(b, l.bytes) === 0)) return;
      if (list) list.push(l.bytes);
      else stored.set(slot(l), [l.bytes]);
      added.push(lines[i]!);
      all.push(l);
    });
  }
  if (all.length === 0) return { blob: null, added };
  if (added.length === 0 && blob) return { blob: Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength), added };
  all.sort(compareLines);
  return { blob: encodeSorted(all), added };
}

import { identityBytes, identityOf } from "./file-identity.js";

/** Consecutive lines of a file, with where each starts. */
export interface LineChunk {
  /** The file's identity (see identityOf). */
  identity: string;
  /** The lines, without their line breaks ("" for a line too long to read). */
  lines: string[];
  /** Byte offset of each line in the (decompressed) file. */
  starts: number[];
  /** Line number (1-based) of the first line. */
  firstLine: number;
  /** Byte offset just after the last line (its line break included). */
  end: number;
  /** Lines longer than the maximum, not read: their length in bytes, by their start offset. */
  tooLong?: Map<number, number>;
}

/** The longest access-log line read by default (--max-line-length): longer ones are rejected alone. */
export const defaultMaxLineBytes = 1024 * 1024;

/**
 * The lines of a byte stream (a file, decompressed if it was gzip; stdin),
 * in chunks of at most `maxLines`, each line with its byte offset. The
 * stream's last line counts even without a final line break (the stream
 * has ended, so it is complete). A line longer than `maxLineBytes` is not
 * kept (its bytes are passed over as they come, so memory stays bounded):
 * it is given as "" with its length in `tooLong`. When the stream fails
 * (a truncated gzip), the complete lines before the failure are yielded,
 * then the error is thrown.
 */
export async function* lineChunks(
  bytes: AsyncIterable<Uint8Array>,
  maxLines: number,
  maxLineBytes = defaultMaxLineBytes,
): AsyncGenerator<LineChunk> {
  let identity: string | undefined;
  let head: Buffer[] = [];
  let headBytes = 0;
  let pending: Buffer | undefined;
  let pendingStart = 0;
  /** A line too long to keep, being passed over: where it started and its bytes so far. */
  let skipping: { start: number; bytes: number } | undefined;
  let lineNumber = 1;
  let chunk: LineChunk | undefined;

  const newChunk = (id: string): LineChunk => ({ identity: id, lines: [], starts: [], firstLine: lineNumber, end: pendingStart });

  /** Adds a line (text, or its length when too long) ending at `end` (after its line break, if any). */
  function* add(id: string, start: number, text: string | number, end: number): Generator<LineChunk> {
    chunk ??= newChunk(id);
    if (typeof text === "number") {
      chunk.lines.push("");
      (chunk.tooLong ??= new Map()).set(start, text);
    } else {
      chunk.lines.push(text);
    }
    chunk.starts.push(start);
    lineNumber++;
    chunk.end = end;
    if (chunk.lines.length === maxLines) {
      yield chunk;
      chunk = undefined;
    }
  }

  function* take(buffer: Buffer, id: string, final: boolean): Generator<LineChunk> {
    let from = 0;
    if (skipping) {
      const newline = buffer.indexOf(10);
      if (newline < 0 && !final) {
        skipping.bytes += buffer.length;
        pending = undefined;
        pendingStart += buffer.length;
        return;
      }
      const length = newline < 0 ? buffer.length : newline;
      const { start, bytes: before } = skipping;
      skipping = undefined;
      yield* add(id, start, before + length, pendingStart + (newline < 0 ? length : newline + 1));
      from = newline < 0 ? buffer.length : newline + 1;
    }
    for (;;) {
      const newline = buffer.indexOf(10, from);
      if (newline < 0) break;
      const length = newline - from;
      yield* add(id, pendingStart + from, length > maxLineBytes ? length : buffer.toString("utf8", from, newline), pendingStart + newline + 1);
      from = newline + 1;
    }
    const rest = buffer.length - from;
    if (final && rest > 0) {
      yield* add(id, pendingStart + from, rest > maxLineBytes ? rest : buffer.toString("utf8", from), pendingStart + buffer.length);
      from = buffer.length;
    } else if (rest > maxLineBytes) {
      // Too long already: passed over until its line break.
      skipping = { start: pendingStart + from, bytes: rest };
      pending = undefined;
      pendingStart += buffer.length;
      return;
    }
    pending = from < buffer.length ? buffer.subarray(from) : undefined;
    pendingStart += from;
  }

  try {
    for await (const piece of bytes) {
      const data = Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
      if (identity === undefined) {
        // The identity needs the first line (or identityBytes): hold bytes until then.
        head.push(data);
        headBytes += data.length;
        const joined = Buffer.concat(head, headBytes);
        identity = identityOf(joined.subarray(0, Math.min(joined.length, identityBytes + 1)), false);
        if (identity === undefined) continue;
        head = [];
        yield* take(joined, identity, false);
      } else {
        yield* take(pending ? Buffer.concat([pending, data]) : data, identity, false);
      }
    }
  } catch (err) {
    // The complete lines read before the failure go out first.
    if (chunk) yield chunk;
    throw err;
  }
  if (identity === undefined) {
    const joined = Buffer.concat(head, headBytes);
    identity = identityOf(joined, true);
    if (identity === undefined) return; // an empty stream
    pending = joined;
  }
  if (pending || skipping) yield* take(pending ?? Buffer.alloc(0), identity, true);
  if (chunk) yield chunk;
}

import { identityBytes, identityOf } from "./file-identity.js";

/** Consecutive lines of a file, with where each starts. */
export interface LineChunk {
  /** The file's identity (see identityOf). */
  identity: string;
  /** The lines, without their line breaks. */
  lines: string[];
  /** Byte offset of each line in the (decompressed) file. */
  starts: number[];
  /** Line number (1-based) of the first line. */
  firstLine: number;
  /** Byte offset just after the last line (its line break included). */
  end: number;
}

/**
 * The lines of a byte stream (a file, decompressed if it was gzip; stdin),
 * in chunks of at most `maxLines`, each line with its byte offset. The
 * stream's last line counts even without a final line break (the stream
 * has ended, so it is complete).
 */
export async function* lineChunks(bytes: AsyncIterable<Uint8Array>, maxLines: number): AsyncGenerator<LineChunk> {
  let identity: string | undefined;
  let head: Buffer[] = [];
  let headBytes = 0;
  let pending: Buffer | undefined;
  let pendingStart = 0;
  let lineNumber = 1;
  let chunk: LineChunk | undefined;

  const newChunk = (id: string): LineChunk => ({ identity: id, lines: [], starts: [], firstLine: lineNumber, end: pendingStart });

  function* take(buffer: Buffer, id: string, final: boolean): Generator<LineChunk> {
    let from = 0;
    for (;;) {
      const newline = buffer.indexOf(10, from);
      if (newline < 0) break;
      chunk ??= newChunk(id);
      chunk.lines.push(buffer.toString("utf8", from, newline));
      chunk.starts.push(pendingStart + from);
      lineNumber++;
      chunk.end = pendingStart + newline + 1;
      from = newline + 1;
      if (chunk.lines.length === maxLines) {
        yield chunk;
        chunk = undefined;
      }
    }
    if (final && from < buffer.length) {
      chunk ??= newChunk(id);
      chunk.lines.push(buffer.toString("utf8", from));
      chunk.starts.push(pendingStart + from);
      lineNumber++;
      chunk.end = pendingStart + buffer.length;
      from = buffer.length;
    }
    pending = from < buffer.length ? buffer.subarray(from) : undefined;
    pendingStart += from;
  }

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
  if (identity === undefined) {
    const joined = Buffer.concat(head, headBytes);
    identity = identityOf(joined, true);
    if (identity === undefined) return; // an empty stream
    pending = joined;
  }
  if (pending) yield* take(pending, identity, true);
  if (chunk) yield chunk;
}

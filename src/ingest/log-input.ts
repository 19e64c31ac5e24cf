import { createReadStream } from "node:fs";
import { Readable } from "node:stream";
import { createGunzip } from "node:zlib";

/** A log file to read: its bytes (gunzipped when it is gzip), and how far reading has got. */
export interface LogInput {
  /** The name to report it by ("-" is stdin). */
  name: string;
  /** The log's bytes, decompressed. */
  bytes: AsyncIterable<Uint8Array>;
  /** Bytes read from the file (compressed, for a gzip file) so far: progress against its size on disk. */
  read(): number;
}

/** gzip's magic number. */
const isGzip = (head: Uint8Array) => head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b;

/**
 * Opens a log file, or stdin for "-". Whether it is gzip is told by its
 * first bytes, not its name (logrotate's .gz files, or `zcat`-less pipes
 * of them). Large reads: a log is read end to end.
 */
export function openLogInput(path: string): LogInput {
  const raw = path === "-" ? process.stdin : createReadStream(path, { highWaterMark: 1 << 20 });
  let read = 0;
  async function* bytes(): AsyncGenerator<Uint8Array> {
    const chunks = raw[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    let first = await chunks.next();
    // A pipe may hand over a single byte first: gzip's magic needs two.
    while (!first.done && first.value.length < 2) {
      const more = await chunks.next();
      if (more.done) break;
      first = { done: false, value: Buffer.concat([first.value, more.value]) };
    }
    if (first.done) return;
    async function* all() {
      read += first.value!.length;
      yield first.value!;
      for (let next = await chunks.next(); !next.done; next = await chunks.next()) {
        read += next.value.length;
        yield next.value;
      }
    }
    if (isGzip(first.value)) yield* Readable.from(all()).pipe(createGunzip({ chunkSize: 1 << 20 }));
    else yield* all();
  }
  return { name: path, bytes: bytes(), read: () => read };
}

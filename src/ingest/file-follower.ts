import { setTimeout as delay } from "node:timers/promises";
import { createReadStream } from "node:fs";
import { type FileHandle, open, readdir, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { createGunzip } from "node:zlib";
import { identityBytes, identityOf } from "./file-identity.js";
import { defaultMaxLineBytes, type LineChunk, lineChunks } from "./line-chunks.js";

/** How far a file has been shipped: every line before `offset` is stored. */
export interface FilePosition {
  /** The followed path the file was (or still is) at. */
  path: string;
  /** The file's identity (see identityOf). */
  identity: string;
  /** Byte offset after the last stored line. */
  offset: number;
  /** Lines before `offset` (for line numbers in messages). */
  line: number;
}

/** Lines read from a followed file, or (no lines, `done`) the end of a rotated file. */
export interface FollowedChunk extends LineChunk {
  /** The followed path. */
  path: string;
  /** The file's name, for messages (a rotated file's new name, once found there). */
  file: string;
  /** This file is finished (rotated away and read to its end): its position is no longer needed. */
  done: boolean;
}

export interface FollowOptions {
  /** The path to follow (e.g. /var/log/nginx/access.log). */
  path: string;
  /** Saved positions of files that were at this path (from the state file). */
  known: readonly FilePosition[];
  /** false: read what is there (rotated files left unfinished too), then end. */
  follow: boolean;
  /** Lines per chunk, at most. */
  maxLines: number;
  /** Longest line read (longer ones are given by their length only: lineChunks); 1 MiB by default. */
  maxLineBytes?: number;
  /** How often the path is looked at when there is nothing new (default 250 ms). */
  pollMs?: number;
  /**
   * How long a file renamed away is still read after it last grew (default
   * 5 s): nginx writes to it until it reopens its logs (SIGUSR1 after the
   * rename).
   */
  rotateWaitMs?: number;
  /** Stops following: the generator ends at the next look. */
  signal: AbortSignal;
  /** Told of rotations and of anything that could not be followed. */
  notice: (message: string) => void;
}

/** One open file being read. */
interface Reader {
  file: string;
  identity: string;
  offset: number;
  line: number;
  /** Next chunk, or undefined when there is nothing new now. */
  read(): Promise<LineChunk | undefined>;
  /** Whether every line there is has been read. */
  atEnd(): Promise<boolean>;
  /** When the file last grew (ms), as far as this reader has seen. */
  grewAt(): number;
  close(): Promise<void>;
}

const readSize = 1 << 20;

/**
 * A plain file read through a handle from a byte offset; only complete
 * lines are taken. A line longer than `maxLineBytes` is not kept: its end is
 * looked for and it is given as "" with its length in `tooLong`.
 */
function fileReader(
  handle: FileHandle,
  file: string,
  identity: string,
  offset: number,
  line: number,
  maxLines: number,
  maxLineBytes: number,
): Reader & { handle: FileHandle; size(): Promise<number> } {
  let buffer = Buffer.alloc(Math.min(readSize, maxLineBytes + 1));
  let lastSize = -1;
  let grewAt = Date.now();
  /** How far the end of a line too long to keep has been looked for (it may still be being written). */
  let scanned: { start: number; upTo: number } | undefined;

  /** Where the line starting at `start` ends (its line break), looking from `from`; undefined while it has none. */
  async function lineEnd(start: number, from: number): Promise<number | undefined> {
    let at = scanned?.start === start ? scanned.upTo : from;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, at);
      const newline = buffer.subarray(0, bytesRead).indexOf(10);
      if (newline >= 0) {
        scanned = undefined;
        return at + newline;
      }
      at += bytesRead;
      if (bytesRead < buffer.length) {
        scanned = { start, upTo: at };
        return undefined;
      }
    }
  }

  const reader = {
    handle,
    file,
    identity,
    offset,
    line,
    async size() {
      const size = (await handle.stat()).size;
      if (size !== lastSize) {
        lastSize = size;
        grewAt = Date.now();
      }
      return size;
    },
    async read(): Promise<LineChunk | undefined> {
      for (;;) {
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, reader.offset);
        if (bytesRead === 0) return undefined;
        const chunk: LineChunk = { identity, lines: [], starts: [], firstLine: reader.line + 1, end: reader.offset };
        const add = (start: number, text: string | number) => {
          chunk.lines.push(typeof text === "string" ? text : "");
          if (typeof text === "number") (chunk.tooLong ??= new Map()).set(start, text);
          chunk.starts.push(start);
        };
        let from = 0;
        while (chunk.lines.length < maxLines) {
          const newline = buffer.indexOf(10, from);
          if (newline < 0 || newline >= bytesRead) break;
          add(reader.offset + from, newline - from > maxLineBytes ? newline - from : buffer.toString("utf8", from, newline));
          from = newline + 1;
        }
        if (chunk.lines.length === 0) {
          if (bytesRead < buffer.length) return undefined; // the last line is still being written
          if (buffer.length <= maxLineBytes) {
            // A line longer than the buffer: read more of it at once, next time round.
            buffer = Buffer.alloc(Math.min(buffer.length * 2, maxLineBytes + 1));
            continue;
          }
          const end = await lineEnd(reader.offset, reader.offset + bytesRead);
          if (end === undefined) return undefined;
          add(reader.offset, end - reader.offset);
          from = end - reader.offset + 1;
        }
        chunk.end = reader.offset + from;
        reader.offset = chunk.end;
        reader.line += chunk.lines.length;
        return chunk;
      }
    },
    async atEnd() {
      return (await reader.size()) <= reader.offset;
    },
    grewAt: () => grewAt,
    close: () => handle.close(),
  };
  return reader;
}

/** A gzip file (a rotated log compressed since), read from a decompressed byte offset to its end. */
function gzipReader(
  path: string,
  identity: string,
  offset: number,
  line: number,
  limits: { maxLines: number; maxLineBytes: number },
  notice: (message: string) => void,
): Reader {
  const chunks = lineChunks(createReadStream(path).pipe(createGunzip()), limits.maxLines, limits.maxLineBytes);
  let ended = false;
  const reader: Reader = {
    file: path,
    identity,
    offset,
    line,
    async read() {
      while (!ended) {
        let next: IteratorResult<LineChunk>;
        try {
          next = await chunks.next();
        } catch (err) {
          // A truncated or corrupt gzip: what came before its end is shipped, the rest cannot be read.
          notice(`${path}: ${err instanceof Error ? err.message : err} after line ${reader.line} (byte ${reader.offset} of its decompressed text); the rest of it cannot be read`);
          ended = true;
          break;
        }
        if (next.done) {
          ended = true;
          break;
        }
        const chunk = next.value;
        const skip = chunk.starts.findIndex((start) => start >= reader.offset);
        if (skip < 0) continue;
        const taken: LineChunk = {
          identity,
          lines: chunk.lines.slice(skip),
          starts: chunk.starts.slice(skip),
          firstLine: reader.line + 1,
          end: chunk.end,
          ...(chunk.tooLong ? { tooLong: chunk.tooLong } : {}),
        };
        reader.offset = chunk.end;
        reader.line += taken.lines.length;
        return taken;
      }
      return undefined;
    },
    atEnd: async () => ended,
    grewAt: () => 0,
    close: async () => void (await chunks.return(undefined)),
  };
  return reader;
}

/** The first bytes of a file (decompressed when it is gzip), enough for its identity. */
async function headOf(path: string): Promise<{ head: Buffer; gzip: boolean } | undefined> {
  const handle = await open(path, "r").catch(() => undefined);
  if (!handle) return undefined;
  try {
    const buffer = Buffer.alloc(identityBytes);
    const { bytesRead } = await handle.read(buffer, 0, identityBytes, 0);
    const head = buffer.subarray(0, bytesRead);
    if (!(head[0] === 0x1f && head[1] === 0x8b)) return { head, gzip: false };
  } finally {
    await handle.close();
  }
  const parts: Buffer[] = [];
  let length = 0;
  for await (const part of createReadStream(path).pipe(createGunzip())) {
    parts.push(part as Buffer);
    length += (part as Buffer).length;
    if (length >= identityBytes) break;
  }
  return { head: Buffer.concat(parts).subarray(0, identityBytes), gzip: true };
}

/**
 * Where a rotated file went: a sibling of `path` whose name starts with its
 * name (access.log.1, access.log-20261118, access.log.2.gz) and whose
 * identity is `identity`.
 */
async function findRotated(path: string, identity: string): Promise<{ path: string; gzip: boolean } | undefined> {
  const dir = dirname(path);
  const name = basename(path);
  const names = await readdir(dir).catch(() => [] as string[]);
  for (const candidate of names.filter((n) => n !== name && n.startsWith(name)).sort()) {
    const full = join(dir, candidate);
    const head = await headOf(full);
    if (head && identityOf(head.head, true) === identity) return { path: full, gzip: head.gzip };
  }
  return undefined;
}

/** Waits `ms`, or less when `signal` aborts. */
const sleep = (ms: number, signal?: AbortSignal) => delay(ms, undefined, { signal }).catch(() => {});

/**
 * Follows a log file as `tail -F` does, through rotation, yielding chunks
 * of complete lines with their identity and offsets:
 *
 * - rename and create (logrotate's default, then nginx -s reopen): the
 *   renamed file is read on through its open handle until it has not grown
 *   for `rotateWaitMs`, while the new file is read from its start;
 * - copytruncate: the file shrinks (or starts with another first line);
 *   what was not yet read is read from the copy (a sibling with the old
 *   identity), then the file from its start;
 * - a restart: each saved position resumes its file, at the path or, if it
 *   was rotated meanwhile, at the sibling with its identity (gzip too).
 *
 * Lines are never read twice in one run and never skipped, except what
 * copytruncate itself loses when no copy holds it (told to `notice`).
 */
export async function* followFile(options: FollowOptions): AsyncGenerator<FollowedChunk> {
  const { path, maxLines, signal, notice } = options;
  const maxLineBytes = options.maxLineBytes ?? defaultMaxLineBytes;
  const pollMs = options.pollMs ?? 250;
  const rotateWaitMs = options.rotateWaitMs ?? 5000;
  const known = new Map(options.known.map((p) => [p.identity, p]));
  type Plain = ReturnType<typeof fileReader>;
  let current: (Plain & { ino: number; dev: number }) | undefined;
  /** Files rotated away, read to their end: when they were seen rotated. */
  const retiring: { reader: Reader; since: number }[] = [];
  const done: string[] = [];

  async function retireFromCopy(identity: string, offset: number, line: number, file: string) {
    const found = await findRotated(path, identity);
    if (!found) {
      notice(`${file}: the file was truncated or replaced and no rotated copy of it starts as it did; lines after byte ${offset} of it that were not read are lost`);
      done.push(identity);
      return;
    }
    notice(`${file}: continuing at byte ${offset} of its rotated copy ${found.path}`);
    const reader = found.gzip
      ? gzipReader(found.path, identity, offset, line, { maxLines, maxLineBytes }, notice)
      : fileReader(await open(found.path, "r"), found.path, identity, offset, line, maxLines, maxLineBytes);
    retiring.push({ reader, since: Date.now() });
  }

  /** Opens the file at the path once its first line is there; resumes its saved position. */
  async function openCurrent(): Promise<void> {
    const handle = await open(path, "r").catch(() => undefined);
    if (!handle) return;
    const info = await handle.stat();
    const head = Buffer.alloc(identityBytes);
    const { bytesRead } = await handle.read(head, 0, identityBytes, 0);
    const identity = identityOf(head.subarray(0, bytesRead), false);
    if (identity === undefined) {
      await handle.close();
      return;
    }
    const saved = known.get(identity);
    known.delete(identity);
    let offset = saved?.offset ?? 0;
    if (offset > info.size) {
      notice(`${path}: the saved position ${offset} is past the file's end (${info.size}); reading it from its start`);
      offset = 0;
    }
    current = Object.assign(fileReader(handle, path, identity, offset, offset === 0 ? 0 : (saved?.line ?? 0), maxLines, maxLineBytes), {
      ino: info.ino,
      dev: info.dev,
    });
  }

  try {
    await openCurrent();
    // Saved positions of files no longer at the path: rotated while this was not running.
    for (const position of known.values()) await retireFromCopy(position.identity, position.offset, position.line, position.path);
    known.clear();

    while (!signal.aborted) {
      const now = Date.now();
      const onDisk = await stat(path).catch(() => undefined);
      if (current && onDisk && (onDisk.ino !== current.ino || onDisk.dev !== current.dev)) {
        notice(`${path}: rotated (a new file is at the path); reading the old one to its end`);
        retiring.push({ reader: current, since: now });
        current = undefined;
      }
      if (current) {
        const size = await current.size();
        const head = Buffer.alloc(identityBytes);
        const { bytesRead } = await current.handle.read(head, 0, identityBytes, 0);
        if (size < current.offset || identityOf(head.subarray(0, bytesRead), false) !== current.identity) {
          notice(`${path}: truncated (copytruncate)`);
          const old = current;
          current = undefined;
          await old.close();
          await retireFromCopy(old.identity, old.offset, old.line, path);
        }
      }
      if (!current && onDisk) await openCurrent();

      let progressed = false;
      for (const reader of [...retiring.map((r) => r.reader), ...(current ? [current] : [])]) {
        const chunk = await reader.read();
        if (chunk) {
          progressed = true;
          yield { ...chunk, path, file: reader.file, done: false };
        }
      }
      for (let i = retiring.length - 1; i >= 0; i--) {
        const { reader, since } = retiring[i]!;
        const quiet = now - Math.max(since, reader.grewAt());
        if ((await reader.atEnd()) && (!options.follow || quiet >= rotateWaitMs)) {
          retiring.splice(i, 1);
          await reader.close();
          done.push(reader.identity);
        }
      }
      for (const identity of done.splice(0)) {
        yield { identity, lines: [], starts: [], firstLine: 0, end: 0, path, file: path, done: true };
      }
      if (progressed) continue;
      if (!options.follow && retiring.length === 0) return;
      await sleep(pollMs, signal);
    }
  } finally {
    for (const { reader } of retiring) await reader.close();
    await current?.close();
  }
}

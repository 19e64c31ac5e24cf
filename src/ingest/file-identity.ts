import { createHash } from "node:crypto";

/** How many bytes of a file's start name it, at most (its first line, cut there). */
export const identityBytes = 4096;

/**
 * The identity of a log file: a hash of its first line (at most
 * `identityBytes`, line break included). It survives what rotation does to
 * a file (a rename, a copy, gzip: the content is the same), so the request
 * ids made from it are the same whichever name or form the file is read
 * under; a file truncated and written anew (copytruncate) starts with
 * another line and is another file. `head` is the file's first bytes
 * (decompressed); `complete` says there are no more. Undefined while the
 * first line is still being written.
 */
export function identityOf(head: Uint8Array, complete: boolean): string | undefined {
  const newline = head.indexOf(10);
  let end: number;
  if (newline >= 0 && newline < identityBytes) end = newline + 1;
  else if (head.length >= identityBytes) end = identityBytes;
  else if (complete && head.length > 0) end = head.length;
  else return undefined;
  return createHash("sha256").update(head.subarray(0, end)).digest("hex").slice(0, 16);
}

/**
 * The request id of the line at byte `offset` of the file `identity`
 * names: the same every time that line is read, so importing or shipping it
 * again overwrites the record instead of adding one.
 */
export function lineRequestId(identity: string, offset: number): string {
  return `${identity}:${offset}`;
}

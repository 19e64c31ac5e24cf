import { createWriteStream, type WriteStream } from "node:fs";

/** A line that was not imported: where it is, and why. */
export interface Rejection {
  file: string;
  line: number;
  problem: string;
}

/**
 * Lines that did not parse: none is dropped silently. Each is counted; the
 * first `show` are kept (and told to `report`, e.g. stderr) with their file
 * and line number; with a reject file, every one is written to it as it was
 * (so it can be fixed and imported again).
 */
export interface RejectedLines {
  /** Counts a rejected line; its text goes to the reject file (undefined: a line not kept, too long to read). */
  add(rejection: Rejection, text: string | undefined): void;
  readonly count: number;
  /** The first rejections, at most `show`. */
  readonly first: readonly Rejection[];
  /** Flushes and closes the reject file. */
  close(): Promise<void>;
}

export function createRejectedLines(options: {
  rejectFile?: string;
  show?: number;
  report?: (rejection: Rejection) => void;
}): RejectedLines {
  const show = options.show ?? 5;
  const first: Rejection[] = [];
  let count = 0;
  let out: WriteStream | undefined;
  let failed: Error | undefined;
  if (options.rejectFile !== undefined) {
    out = createWriteStream(options.rejectFile, { flags: "a" });
    out.on("error", (err) => (failed = err));
  }
  return {
    add(rejection, text) {
      count++;
      if (first.length < show) {
        first.push(rejection);
        options.report?.(rejection);
      }
      if (text !== undefined) out?.write(`${text}\n`);
    },
    get count() {
      return count;
    },
    first,
    async close() {
      if (out) await new Promise<void>((resolve) => out!.end(resolve));
      if (failed) throw new Error(`cannot write the reject file ${options.rejectFile}: ${failed.message}`, { cause: failed });
    },
  };
}

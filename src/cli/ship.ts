import { createHash } from "node:crypto";
import { resolve } from "node:path";
import { createLogServiceClient } from "../client/log-service-client.js";
import { chunkRecords } from "../ingest/chunk-records.js";
import { type FollowedChunk, type FilePosition, followFile } from "../ingest/file-follower.js";
import { type OutgoingBatch, sendBatches } from "../ingest/ingest-sender.js";
import { defaultMaxLineBytes } from "../ingest/line-chunks.js";
import { createRejectedLines } from "../ingest/rejected-lines.js";
import { openShipState } from "../ingest/ship-state.js";
import { type AccessLogOptions, accessLogParser, type CommandOutput, defaultOutput } from "./import.js";

export interface ShipOptions extends AccessLogOptions {
  /** Keep following the files (else: ship what is there, then exit). */
  follow: boolean;
  /** The state file; by default one in the working folder named after the app and files. */
  state?: string;
  /** How long a rotated file is still read after it last grew, in ms. */
  rotateWait: number;
  /** How often files are looked at when nothing is new, in ms. */
  poll: number;
}

/** The default state file: one per app and set of files, in the working folder. */
export function defaultStatePath(app: string, files: string[]): string {
  const key = createHash("sha256").update(JSON.stringify([app, ...files.map((f) => resolve(f))])).digest("hex").slice(0, 12);
  return `reqlog-ship-${key}.state.json`;
}

/** Chunks of several generators as each has one (they are read concurrently). */
async function* merged<T>(sources: AsyncGenerator<T>[]): AsyncGenerator<T> {
  const pending = new Map(sources.map((source, i) => [i, source.next().then((result) => ({ i, result }))]));
  try {
    while (pending.size > 0) {
      const { i, result } = await Promise.race(pending.values());
      if (result.done) {
        pending.delete(i);
        continue;
      }
      pending.set(i, sources[i]!.next().then((next) => ({ i, result: next })));
      yield result.value;
    }
  } finally {
    await Promise.all(sources.map((s) => s.return(undefined)));
  }
}

type Meta = { position: FilePosition } | { done: string };

/**
 * `reqlog ship`: follows access logs (through rotation by rename and by
 * copytruncate) and sends their lines as request records over Ingest. The
 * position in each file is saved to the state file only after the server
 * acknowledged the lines before it, so a restart (or a kill -9) resumes
 * there without losing a line; lines sent again are stored once (their
 * request ids are the same). While the server is down it retries with
 * backoff; SIGINT or SIGTERM stops it after the batches in flight are
 * acknowledged. Returns the exit status: 0, or 1 when lines were rejected.
 */
export async function shipCommand(files: string[], options: ShipOptions, output: CommandOutput = defaultOutput): Promise<number> {
  if (files.includes("-")) throw new Error("ship follows files by their path: for stdin, use reqlog import -");
  const parser = accessLogParser(options);
  const maxLineBytes = options.maxLineLength ?? defaultMaxLineBytes;
  const statePath = options.state ?? defaultStatePath(options.app, files);
  const state = openShipState(statePath);
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  const say = (text: string) => output.stderr.write(`reqlog ship: ${text}\n`);
  const rejected = createRejectedLines({
    rejectFile: options.rejectFile,
    report: (r) => output.stderr.write(`${r.file}:${r.line}: ${r.problem}\n`),
  });
  let lines = 0;
  let records = 0;
  try {
    const followers = files.map((file) =>
      followFile({
        path: file,
        known: [...state.positions.values()].filter((p) => p.path === file),
        follow: options.follow,
        maxLines: options.batch,
        maxLineBytes,
        pollMs: options.poll,
        rotateWaitMs: options.rotateWait,
        signal: stop.signal,
        notice: say,
      }),
    );
    async function* batches(): AsyncGenerator<OutgoingBatch<Meta>> {
      for await (const chunk of merged<FollowedChunk>(followers)) {
        if (chunk.done) {
          yield { records: [], meta: { done: chunk.identity } };
          continue;
        }
        lines += chunk.lines.length;
        const { records } = chunkRecords(chunk, chunk.file, parser, rejected, maxLineBytes);
        // Sent even when every line was rejected: its acknowledgement moves the saved position past them.
        yield { records, meta: { position: { path: chunk.path, identity: chunk.identity, offset: chunk.end, line: chunk.firstLine - 1 + chunk.lines.length } } };
      }
    }
    say(`${options.follow ? "following" : "shipping"} ${files.join(", ")} (state: ${statePath})`);
    await sendBatches(
      batches(),
      (meta, ack) => {
        records += ack.records;
        if ("done" in meta) state.drop(meta.done);
        else state.set(meta.position);
      },
      {
        connect: () => createLogServiceClient(options),
        onRetry: (reason, delayMs) => say(`${reason}; retrying in ${(delayMs / 1000).toFixed(1)} s`),
        stop: stop.signal,
      },
    );
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    state.release();
    await rejected.close();
  }
  output.stdout(
    `shipped ${files.join(", ")}: ${lines.toLocaleString("en-US")} lines read, ${records.toLocaleString("en-US")} records stored, ${rejected.count.toLocaleString("en-US")} rejected\n`,
  );
  return rejected.count > 0 ? 1 : 0;
}

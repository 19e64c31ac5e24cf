import { statSync } from "node:fs";
import { type ClientOptions, createLogServiceClient } from "../client/log-service-client.js";
import { type AccessLogParser, createAccessLogParser, type FormatChoice } from "../ingest/access-log-parser.js";
import { chunkRecords } from "../ingest/chunk-records.js";
import { type OutgoingBatch, sendBatches } from "../ingest/ingest-sender.js";
import { defaultMaxLineBytes, lineChunks } from "../ingest/line-chunks.js";
import { openLogInput } from "../ingest/log-input.js";
import { createRejectedLines, type Rejection } from "../ingest/rejected-lines.js";
import { forgeRouteTable, loadRouteTable, type RouteTable } from "../routes/route-table.js";
import { createImportProgress, type ImportProgress } from "./import-progress.js";

/** Where records go and how lines are read: what import and ship share. */
export interface AccessLogOptions extends ClientOptions, FormatChoice {
  app: string;
  module?: string;
  version: string;
  /** A routes file extending (or replacing) the forge's route table. */
  routes?: string;
  rejectFile?: string;
  /** Lines per Ingest batch (at most the server's max-records-per-write). */
  batch: number;
  /** Longest line read (--max-line-length); a longer one is rejected alone. */
  maxLineLength?: number;
}

export interface ImportOptions extends AccessLogOptions {
  json: boolean;
  progress: boolean;
  /** How long to keep retrying while the server cannot be reached, in ms. */
  retryFor: number;
}

/** What an import did. */
export interface ImportSummary {
  files: string[];
  lines: number;
  records: number;
  rejected: number;
  blank: number;
  seconds: number;
  /** The first rejected lines, with file, line number and problem. */
  firstRejected: Rejection[];
  /** Files that could not be read to their end, and where each stopped. */
  stopped?: string[];
}

/** Where an import writes: stdout for results, stderr for problems and (on a terminal) the bar. */
export interface CommandOutput {
  stdout: (text: string) => void;
  stderr: NodeJS.WriteStream;
}

export const defaultOutput: CommandOutput = { stdout: (t) => process.stdout.write(t), stderr: process.stderr };

/** The route table of --routes (the forge's table extended or replaced), or the forge's. */
export function routeTableOf(file: string | undefined): RouteTable {
  return file === undefined ? forgeRouteTable : loadRouteTable(file);
}

/** The parser of the shared flags: the format, and the app, module, version and routes records go to. */
export function accessLogParser(options: AccessLogOptions): AccessLogParser {
  return createAccessLogParser(
    { format: options.format, logFormat: options.logFormat },
    { appId: options.app, moduleId: options.module, versionId: options.version, routes: routeTableOf(options.routes) },
  );
}

const number = (n: number) => n.toLocaleString("en-US");

export function formatSummary(s: ImportSummary): string {
  const rate = s.seconds > 0 ? Math.round(s.lines / s.seconds) : s.lines;
  const blank = s.blank > 0 ? `, ${number(s.blank)} blank` : "";
  const more = s.rejected > s.firstRejected.length ? ` (the first ${s.firstRejected.length} are above)` : "";
  const stopped = s.stopped ? `, ${s.stopped.length} ${s.stopped.length === 1 ? "file" : "files"} not read to the end (above)` : "";
  return (
    `imported ${s.files.join(", ")}: ${number(s.lines)} lines, ${number(s.records)} records stored, ` +
    `${number(s.rejected)} rejected${more}${blank}${stopped}, in ${s.seconds.toFixed(1)} s (${number(rate)} lines/s)`
  );
}

/**
 * `reqlog import`: reads access logs (plain or gzip; "-" for stdin), turns
 * each line into a request record and sends them over Ingest, each batch
 * acknowledged once committed. Request ids come from the file's identity
 * and the line's byte offset (or its $request_id), so importing a file
 * again stores nothing twice. Returns the exit status: 0, or 1 when lines
 * were rejected.
 */
export async function importCommand(files: string[], options: ImportOptions, output: CommandOutput = defaultOutput): Promise<number> {
  const parser = accessLogParser(options);
  const maxLineBytes = options.maxLineLength ?? defaultMaxLineBytes;
  // Every file is looked at before anything is sent: a missing one fails the import up front.
  const sizes = files.map((file) => {
    if (file === "-") return undefined;
    try {
      return statSync(file).size;
    } catch (err) {
      throw new Error(`cannot read ${file}: ${err instanceof Error ? err.message : err}`, { cause: err });
    }
  });
  const rejected = createRejectedLines({
    rejectFile: options.rejectFile,
    report: options.json ? undefined : (r) => output.stderr.write(`${r.file}:${r.line}: ${r.problem}\n`),
  });
  const total = sizes.includes(undefined) ? undefined : sizes.reduce<number>((a, b) => a + b!, 0);
  const progress: ImportProgress | undefined =
    options.progress && !options.json && output.stderr.isTTY ? createImportProgress(total, output.stderr) : undefined;

  const started = performance.now();
  let lines = 0;
  let blank = 0;
  let records = 0;
  let readBefore = 0;

  /** Files that could not be read to their end (a truncated gzip): where each stopped. */
  const stopped: string[] = [];

  async function* batches(): AsyncGenerator<OutgoingBatch<undefined>> {
    for (const file of files) {
      const input = openLogInput(file);
      let fileLines = 0;
      let end = 0;
      try {
        for await (const chunk of lineChunks(input.bytes, options.batch, maxLineBytes)) {
          lines += chunk.lines.length;
          fileLines += chunk.lines.length;
          end = chunk.end;
          const result = chunkRecords(chunk, file, parser, rejected, maxLineBytes);
          blank += result.blank;
          progress?.update(readBefore + input.read(), lines);
          if (result.records.length > 0) yield { records: result.records, meta: undefined };
        }
      } catch (err) {
        // The lines before the failure are sent; the import goes on with the next file and fails at its end.
        const problem =
          `${file}: ${err instanceof Error ? err.message : err} after line ${fileLines} (byte ${end} of its text); ` +
          `its ${fileLines.toLocaleString("en-US")} lines before that are imported, the rest of it is not`;
        stopped.push(problem);
        if (!options.json) output.stderr.write(`reqlog import: ${problem}\n`);
      }
      readBefore += input.read();
    }
  }

  try {
    await sendBatches(batches(), (_, ack) => void (records += ack.records), {
      connect: () => createLogServiceClient(options),
      retryForMs: options.retryFor,
      onRetry: (reason, delayMs) => {
        if (!options.json) output.stderr.write(`reqlog import: ${reason}; retrying in ${(delayMs / 1000).toFixed(1)} s\n`);
      },
    });
  } finally {
    progress?.stop();
    await rejected.close();
  }
  const summary: ImportSummary = {
    files,
    lines,
    records,
    rejected: rejected.count,
    blank,
    seconds: Math.round(performance.now() - started) / 1000,
    firstRejected: [...rejected.first],
    ...(stopped.length > 0 ? { stopped } : {}),
  };
  output.stdout(options.json ? `${JSON.stringify(summary)}\n` : `${formatSummary(summary)}\n`);
  return rejected.count > 0 || stopped.length > 0 ? 1 : 0;
}

import type { RequestLog } from "../../gen/reqlog/v1/log_service_pb.js";
import type { AccessLogParser } from "./access-log-parser.js";
import { lineRequestId } from "./file-identity.js";
import { defaultMaxLineBytes, type LineChunk } from "./line-chunks.js";
import type { RejectedLines } from "./rejected-lines.js";

/** What a chunk of lines came to. */
export interface ChunkRecords {
  records: RequestLog[];
  /** Empty lines (nothing to import, nothing wrong). */
  blank: number;
}

/**
 * The request records of a chunk of access-log lines of `file`; a line
 * that does not parse, or is longer than `maxLineBytes` (not read:
 * lineChunks), goes to `rejected` with its file and line number, alone.
 * A line without a $request_id of its own is named by its file's identity
 * and byte offset, so reading it again names it the same.
 */
export function chunkRecords(
  chunk: Pick<LineChunk, "identity" | "lines" | "starts" | "firstLine" | "tooLong">,
  file: string,
  parser: AccessLogParser,
  rejected: RejectedLines,
  maxLineBytes = defaultMaxLineBytes,
): ChunkRecords {
  const records: RequestLog[] = [];
  let blank = 0;
  for (let i = 0; i < chunk.lines.length; i++) {
    const line = chunk.lines[i]!;
    const where = { file, line: chunk.firstLine + i };
    const length = chunk.tooLong?.get(chunk.starts[i]!);
    if (length !== undefined) {
      // Not kept, so not in the reject file either.
      rejected.add({ ...where, problem: `the line is ${length} bytes long, over --max-line-length=${maxLineBytes}` }, undefined);
      continue;
    }
    if (line.trim() === "") {
      blank++;
      continue;
    }
    let parsed: ReturnType<AccessLogParser["parse"]>;
    try {
      parsed = parser.parse(line, () => lineRequestId(chunk.identity, chunk.starts[i]!));
    } catch (err) {
      // A parser failure on one line (a regex out of stack on a very long one) rejects that line alone.
      parsed = { problem: `cannot parse it: ${err instanceof Error ? err.message : err}` };
    }
    if ("log" in parsed) records.push(parsed.log);
    else rejected.add({ ...where, problem: parsed.problem }, line);
  }
  return { records, blank };
}

import type { RequestLog } from "../../gen/reqlog/v1/log_service_pb.js";
import type { AccessLogParser } from "./access-log-parser.js";
import { lineRequestId } from "./file-identity.js";
import type { LineChunk } from "./line-chunks.js";
import type { RejectedLines } from "./rejected-lines.js";

/** What a chunk of lines came to. */
export interface ChunkRecords {
  records: RequestLog[];
  /** Empty lines (nothing to import, nothing wrong). */
  blank: number;
}

/**
 * The request records of a chunk of access-log lines of `file`; a line
 * that does not parse goes to `rejected` with its file and line number.
 * A line without a $request_id of its own is named by its file's identity
 * and byte offset, so reading it again names it the same.
 */
export function chunkRecords(
  chunk: Pick<LineChunk, "identity" | "lines" | "starts" | "firstLine">,
  file: string,
  parser: AccessLogParser,
  rejected: RejectedLines,
): ChunkRecords {
  const records: RequestLog[] = [];
  let blank = 0;
  for (let i = 0; i < chunk.lines.length; i++) {
    const line = chunk.lines[i]!;
    if (line.trim() === "") {
      blank++;
      continue;
    }
    const parsed = parser.parse(line, () => lineRequestId(chunk.identity, chunk.starts[i]!));
    if ("log" in parsed) records.push(parsed.log);
    else rejected.add({ file, line: chunk.firstLine + i, problem: parsed.problem }, line);
  }
  return { records, blank };
}

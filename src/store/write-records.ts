import type { AppLine, PreparedRecord, RequestContext, RequestLines } from "../domain/records.js";
import type { WriteResult } from "./store.js";

/** A backend's request writer, as a Write or Ingest call uses it inside its transaction. */
export interface RecordsWriter {
  /** Stores one record; returns the app lines it newly stored. */
  writeRecord(record: PreparedRecord, at: bigint): number;
  /** Stores app lines of a request; returns the lines newly stored. */
  flushLines(request: RequestContext, lines: readonly AppLine[], at: bigint): number;
}

/** A Write's or Ingest's records, then its lines, stored at one time `at` (every backend's body of both calls). */
export function writeRecords(
  writer: RecordsWriter,
  records: readonly PreparedRecord[],
  flushes: readonly RequestLines[],
  at: bigint,
): WriteResult {
  let lines = 0;
  for (const record of records) lines += writer.writeRecord(record, at);
  for (const f of flushes) lines += writer.flushLines(f.request, f.lines, at);
  return { records: records.length, lines };
}

import { create, isFieldSet } from "@bufbuild/protobuf";
import type Database from "better-sqlite3";
import { type LogLine, LogLineSchema, type RequestLog, RequestLogSchema } from "../../../../gen/reqlog/v1/log_service_pb.js";
import { withExtras } from "../../../format/combined-line.js";
import type { ReadPlan } from "../../../query/read-plan.js";
import { decodeLines } from "../rows/line-blob.js";
import { recordColumnsSql, recordJoin } from "../rows/sql.js";
import { rowToRequestLog } from "../rows/stored-record.js";

export type Row = Record<string, unknown>;

/** A request's lines (its row's `lines` blob) in time order; with `perRequest`, only the last that many. */
export function linesOf(blob: Buffer | null, perRequest?: number): { lines: LogLine[]; truncated: boolean } {
  let stored = decodeLines(blob);
  const truncated = perRequest !== undefined && stored.length > perRequest;
  if (truncated) stored = stored.slice(stored.length - perRequest);
  const lines = stored.map((l) => create(LogLineSchema, { time: l.time, level: l.level, logMessage: l.message }));
  return { lines, truncated };
}

/** Request rows by request id, and rows as the RequestLogs a Read returns (with their app lines). */
export function createLineLoader(db: Database.Database): LineLoader {
  const recordById = db
    .prepare(`SELECT ${recordColumnsSql} FROM ${recordJoin} WHERE r.app_key = ? AND r.request_id = ?`)
    .safeIntegers(true);

  return {
    /** The rows of these request ids that exist, in the order given, once each. */
    recordRows(app: number, requestIds: readonly Uint8Array[]): Row[] {
      const seen = new Set<string>();
      const rows: Row[] = [];
      for (const requestId of requestIds) {
        const key = Buffer.from(requestId).toString("hex");
        if (seen.has(key)) continue;
        seen.add(key);
        const row = recordById.get(app, Buffer.from(requestId.buffer, requestId.byteOffset, requestId.byteLength)) as Row | undefined;
        if (row) rows.push(row);
      }
      return rows;
    },

    /** A row as a Read returns it: app lines as the plan asks, extras in `combined`. */
    toLog(row: Row, plan: ReadPlan): RequestLog {
      const log = rowToRequestLog(row);
      if (plan.appLogs) {
        const { lines, truncated } = linesOf(row.lines as Buffer | null, plan.appLogs.perRequest);
        log.line = lines;
        if (truncated) log.linesIncomplete = true;
      }
      log.combined = withExtras(log.combined, log, plan.combinedExtras, (field) =>
        isFieldSet(log, RequestLogSchema.field[field]),
      );
      return log;
    },
  };
}

export interface LineLoader {
  /** The rows of these request ids that exist, in the order given, once each. */
  recordRows(app: number, requestIds: readonly Uint8Array[]): Row[];
  /** A row as a Read returns it: app lines as the plan asks, extras in `combined`. */
  toLog(row: Row, plan: ReadPlan): RequestLog;
}

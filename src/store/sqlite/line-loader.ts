import { create, isFieldSet } from "@bufbuild/protobuf";
import type Database from "better-sqlite3";
import { type LogLine, LogLineSchema, type RequestLog, RequestLogSchema } from "../../../gen/reqlog/v1/log_service_pb.js";
import { withExtras } from "../../format/combined-line.js";
import type { ReadPlan } from "../../query/read-plan.js";
import { rowToRequestLog, toSql } from "./record-columns.js";
import { recordColumnsSql, recordJoin } from "./sql.js";

export type Row = Record<string, unknown>;

/** Request rows by request id, and rows as the RequestLogs a Read returns (with their app lines). */
export function createLineLoader(db: Database.Database) {
  const stmt = {
    recordById: db
      .prepare(`SELECT ${recordColumnsSql} FROM ${recordJoin} WHERE r.app_key = ? AND r.request_id = ?`)
      .safeIntegers(true),
    linesOf: db
      .prepare("SELECT time, level, message FROM lines WHERE request_key = ? ORDER BY time, pos")
      .safeIntegers(true),
    lastLinesOf: db
      .prepare("SELECT time, level, message FROM lines WHERE request_key = ? ORDER BY time DESC, pos DESC LIMIT ?")
      .safeIntegers(true),
  };

  /** A request's lines in time order; with `perRequest`, only the last that many. */
  function linesOf(requestKey: bigint, perRequest?: number): { lines: LogLine[]; truncated: boolean } {
    const rows = (
      perRequest === undefined ? stmt.linesOf.all(requestKey) : stmt.lastLinesOf.all(requestKey, perRequest + 1)
    ) as Row[];
    const truncated = perRequest !== undefined && rows.length > perRequest;
    if (perRequest !== undefined) {
      // lastLinesOf returns newest first: keep the newest N, in time order.
      rows.splice(perRequest);
      rows.reverse();
    }
    const lines = rows.map((l) =>
      create(LogLineSchema, { time: l.time as bigint, level: Number(l.level), logMessage: l.message as string }),
    );
    return { lines, truncated };
  }

  return {
    linesOf,

    /** The rows of these request ids that exist, in the order given, once each. */
    recordRows(app: number, requestIds: readonly Uint8Array[]): Row[] {
      const seen = new Set<string>();
      const rows: Row[] = [];
      for (const requestId of requestIds) {
        const key = Buffer.from(requestId).toString("hex");
        if (seen.has(key)) continue;
        seen.add(key);
        const row = stmt.recordById.get(app, toSql(RequestLogSchema.field.requestId, requestId)) as Row | undefined;
        if (row) rows.push(row);
      }
      return rows;
    },

    /** A row as a Read returns it: app lines as the plan asks, extras in `combined`. */
    toLog(row: Row, plan: ReadPlan): RequestLog {
      const log = rowToRequestLog(row);
      if (plan.appLogs) {
        const { lines, truncated } = linesOf(row.id as bigint, plan.appLogs.perRequest);
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

export type LineLoader = ReturnType<typeof createLineLoader>;

import { create, isFieldSet } from "@bufbuild/protobuf";
import { type LogLine, LogLineSchema, type RequestLog, RequestLogSchema } from "../../../../gen/reqlog/v1/log_service_pb.js";
import { withExtras } from "../../../format/combined-line.js";
import type { ReadPlan } from "../../../query/read-plan.js";
import { and } from "./plan-sql.js";
import { type RequestRow, requestKey, requestsRead, rowToLog } from "../rows/request-row.js";
import type { SqlClient } from "../sql-client.js";
import { sqlInt, sqlList, sqlString } from "../rows/sql-literal.js";

interface LineRow {
  request_id: string;
  rkey: string;
  time: string;
  level: number;
  message: string;
}

/** Request rows by id, and rows as the RequestLogs a Read returns (with their app lines). */
export function createRecordReader(sql: SqlClient): RecordReader {
  /**
   * The app lines of these requests (rows of one app; their current incarnation), in time
   * order, by requestKey; with `perRequest`, the last that many and whether
   * there were more.
   */
  async function linesOf(rows: readonly RequestRow[], perRequest: number | undefined, signal?: AbortSignal) {
    const found = new Map<string, { lines: LogLine[]; truncated: boolean }>();
    const withLines = rows.filter((r) => r.line_count !== "0");
    if (withLines.length === 0) return found;
    const owners = sqlList(withLines.map((r) => `(${sqlString(r.request_id)}, ${sqlInt(BigInt(r.rkey))})`));
    const lines = await sql.rows<LineRow>(
      `SELECT request_id, rkey, time, level, message FROM lines FINAL
       WHERE app = ${sqlString(withLines[0]!.app)} AND (request_id, rkey) IN ${owners}
       ${perRequest === undefined ? "ORDER BY request_id, rkey, time, pos" : `ORDER BY request_id, rkey, time DESC, pos DESC LIMIT ${sqlInt(perRequest + 1)} BY request_id, rkey`}`,
      signal,
    );
    for (const line of lines) {
      const key = requestKey(withLines[0]!.app, line.request_id);
      let entry = found.get(key);
      if (!entry) found.set(key, (entry = { lines: [], truncated: false }));
      entry.lines.push(create(LogLineSchema, { time: BigInt(line.time), level: line.level, logMessage: line.message }));
    }
    if (perRequest !== undefined) {
      // Newest first, one more than asked: keep the newest N, in time order.
      for (const entry of found.values()) {
        entry.truncated = entry.lines.length > perRequest;
        entry.lines = entry.lines.slice(0, perRequest).reverse();
      }
    }
    return found;
  }

  return {
    /**
     * The latest versions of these requests of one app that exist (and pass
     * `filters`), in the order given, once each.
     */
    async byIds(app: string, requestIds: readonly string[], filters: readonly string[], signal?: AbortSignal): Promise<RequestRow[]> {
      const ids = [...new Set(requestIds)];
      if (ids.length === 0) return [];
      // The latest version of each by seq, not FINAL: FINAL merges every
      // part's rows of the granules the ids fall in, which took most of a
      // page's time (38 of 47 ms at 300k requests before merges settled).
      const rows = await sql.rows<RequestRow>(
        `SELECT * FROM ${requestsRead(`WHERE app = ${sqlString(app)} AND request_id IN ${sqlList(ids.map(sqlString))}
                                       ORDER BY request_id, seq DESC LIMIT 1 BY request_id`)}
         WHERE deleted = 0 AND ${and(filters)}`,
        signal,
      );
      const byId = new Map(rows.map((r) => [r.request_id, r]));
      return ids.flatMap((id) => byId.get(id) ?? []);
    },

    /** Stored records with all their lines (getRequests). */
    async withAllLines(rows: readonly RequestRow[], signal?: AbortSignal): Promise<RequestLog[]> {
      const lines = await linesOf(rows, undefined, signal);
      return rows.map((row) => {
        const log = rowToLog(row);
        log.line = lines.get(requestKey(row.app, row.request_id))?.lines ?? [];
        return log;
      });
    },

    /** Rows as a Read returns them: app lines as the plan asks, extras in `combined`. */
    async toLogs(rows: readonly RequestRow[], plan: ReadPlan, signal?: AbortSignal): Promise<RequestLog[]> {
      const lines = plan.appLogs ? await linesOf(rows, plan.appLogs.perRequest, signal) : undefined;
      return rows.map((row) => {
        const log = rowToLog(row);
        const own = lines?.get(requestKey(row.app, row.request_id));
        if (own) {
          log.line = own.lines;
          if (own.truncated) log.linesIncomplete = true;
        }
        log.combined = withExtras(log.combined, log, plan.combinedExtras, (field) => isFieldSet(log, RequestLogSchema.field[field]));
        return log;
      });
    },
  };
}

export interface RecordReader {
  /**
   * The latest versions of these requests of one app that exist (and pass
   * `filters`), in the order given, once each.
   */
  byIds(app: string, requestIds: readonly string[], filters: readonly string[], signal?: AbortSignal): Promise<RequestRow[]>;
  /** Stored records with all their lines (getRequests). */
  withAllLines(rows: readonly RequestRow[], signal?: AbortSignal): Promise<RequestLog[]>;
  /** Rows as a Read returns them: app lines as the plan asks, extras in `combined`. */
  toLogs(rows: readonly RequestRow[], plan: ReadPlan, signal?: AbortSignal): Promise<RequestLog[]>;
}

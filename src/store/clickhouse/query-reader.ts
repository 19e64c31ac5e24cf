import { logRow } from "../../query/logsql/log-row.js";
import { compileFilter } from "../../query/logsql/match-filter.js";
import type { QueryPlan } from "../../query/logsql/plan-query.js";
import { queryField } from "../../query/logsql/query-fields.js";
import { createPipeline, requestFieldsRead } from "../../query/logsql/run-pipes.js";
import type { QueryResult } from "../store.js";
import { and } from "./plan-sql.js";
import type { RecordReader } from "./record-reader.js";
import { type RequestRow, rowToLog } from "./request-row.js";
import type { SqlClient } from "./sql-client.js";
import { sqlInt, sqlString } from "./sql-literal.js";

const typeOf = (field: string) => queryField(field)!.type;

/**
 * Queries on ClickHouse (docs/query.md) from the rows: the latest version
 * of each finished request of the app in the plan's `_time` range, newest
 * first, at most the budget's rows of them; the filter and the pipes run in
 * reqlog (the shared matcher and pipeline) on the rows ClickHouse sends.
 */
export function createQueryReader(sql: SqlClient, records: RecordReader) {
  return {
    async query(plan: QueryPlan, signal: AbortSignal): Promise<QueryResult> {
      const keep = compileFilter(plan.query.filter, typeOf);
      const pipeline = createPipeline(plan.query, { maxQueryGroups: plan.maxGroups, maxRows: plan.maxRows });
      const where = [`app = ${sqlString(plan.appId)}`, "deleted = 0", "has_record = 1", "finished = 1"];
      if (plan.time.min !== -Infinity) where.push(`sort_time >= ${sqlInt(plan.time.min)}`);
      if (plan.time.max !== Infinity) where.push(`sort_time <= ${sqlInt(plan.time.max)}`);
      const rows = await sql.rows<RequestRow>(
        `SELECT * FROM requests FINAL WHERE ${and(where)} ORDER BY sort_time DESC, rkey DESC LIMIT ${sqlInt(plan.budget.rows + 1)}`,
        signal,
      );
      const fields = requestFieldsRead(plan.query);
      const logs = fields.has("line") || fields.has("level") ? await records.withAllLines(rows, signal) : rows.map(rowToLog);
      let scanned = 0;
      for (const log of logs) {
        scanned++;
        const row = logRow(log);
        if (keep(row) && !pipeline.push(row)) break;
        if (scanned > plan.budget.rows) break;
      }
      let total: number | undefined;
      if (rows.length > plan.budget.rows) {
        const [count] = await sql.rows<{ n: string }>(`SELECT count() AS n FROM requests FINAL WHERE ${and(where)}`, signal);
        total = Number(count!.n);
      }
      return { rows: pipeline.finish(), source: "scan", scanned, ...(total !== undefined && total > scanned ? { total } : {}), cut: pipeline.cut };
    },
  };
}

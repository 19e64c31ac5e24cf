import { logRow } from "../../../query/logsql/log-row.js";
import { compileFilter } from "../../../query/logsql/match-filter.js";
import type { QueryPlan } from "../../../query/logsql/plan-query.js";
import { queryField } from "../../../query/logsql/query-fields.js";
import type { Value } from "../../../query/logsql/query-value.js";
import { compareKeys, createPipeline, requestFieldsRead, tooManyGroups } from "../../../query/logsql/run-pipes.js";
import type { QueryResult } from "../../store.js";
import { and } from "./plan-sql.js";
import { compileQuery, filterSql, type VersionSource } from "./query-sql.js";
import { withVersionSource } from "./version-source.js";
import type { RecordReader } from "./record-reader.js";
import { type RequestRow, rowToLog } from "../rows/request-row.js";
import type { SqlClient } from "../sql-client.js";
import { sqlInt, sqlString } from "../rows/sql-literal.js";

const typeOf = (field: string) => queryField(field)!.type;

/**
 * Queries on ClickHouse (docs/query.md). When the filter and the first pipe
 * have exact SQL (query-sql.ts), ClickHouse answers them (GROUP BY, ORDER BY
 * … LIMIT) over the latest version of each finished request of the app, and
 * reqlog runs the pipes after on the few rows that come back. Otherwise
 * ClickHouse narrows the rows as far as SQL can, newest first and at most
 * the scan budget's rows, and reqlog decides the filter and runs the pipes.
 */
export function createQueryReader(sql: SqlClient, records: RecordReader, onCluster: boolean) {
  return {
    query(plan: QueryPlan, signal: AbortSignal): Promise<QueryResult> {
      return withVersionSource(sql, onCluster, signal, (from) => answer(plan, from, signal));
    },
  };

  async function answer(plan: QueryPlan, from: VersionSource, signal: AbortSignal): Promise<QueryResult> {
    const where = [`app = ${sqlString(plan.appId)}`, "deleted = 0", "has_record = 1", "finished = 1"];
    if (plan.time.min !== -Infinity) where.push(`sort_time >= ${sqlInt(plan.time.min)}`);
    if (plan.time.max !== Infinity) where.push(`sort_time <= ${sqlInt(plan.time.max)}`);
    const count = async () => {
      const [row] = await sql.rows<{ n: string }>(`SELECT count() AS n FROM ${from(and(where))}`, signal);
      return Number(row!.n);
    };

    const compiled = compileQuery(plan, from, where);
    if (compiled) {
      const pipeline = createPipeline(plan.query, { maxQueryGroups: plan.maxGroups, maxRows: plan.maxRows }, compiled.startAt);
      let rows = (await sql.rows<Record<string, unknown>>(compiled.sql, signal)).map((r) => compiled.decode(r));
      let total: number | undefined;
      if (compiled.scan && rows.length > plan.budget.rows) {
        rows = rows.slice(0, plan.budget.rows);
        total = await count();
      }
      if (compiled.groups) {
        const pipe = plan.query.pipes[0]!;
        if (pipe.kind === "stats") {
          if (rows.length > plan.maxGroups) throw tooManyGroups({ maxQueryGroups: plan.maxGroups });
          const keys = (r: Map<string, Value>) => pipe.by.map((b) => r.get(b.field) ?? null);
          rows.sort((a, b) => compareKeys(keys(a), keys(b)));
        } else if (pipe.kind === "top") {
          const keys = (r: Map<string, Value>) => pipe.by.map((b) => r.get(b) ?? null);
          rows.sort((a, b) => (b.get(pipe.hitsName) as number) - (a.get(pipe.hitsName) as number) || compareKeys(keys(a), keys(b)));
        }
      }
      for (const r of rows) if (!pipeline.push({ get: (f) => r.get(f) ?? null })) break;
      return { rows: pipeline.finish(), source: "sql", scanned: rows.length, ...(total !== undefined ? { total } : {}), cut: pipeline.cut };
    }

    // The filter is decided here: ClickHouse sends what its SQL cannot rule out, newest first.
    const keep = compileFilter(plan.query.filter, typeOf);
    const pipeline = createPipeline(plan.query, { maxQueryGroups: plan.maxGroups, maxRows: plan.maxRows });
    const narrowed = filterSql(plan.query.filter).sql;
    const rows = await sql.rows<RequestRow>(
      `SELECT * FROM ${from(and([...where, `(${narrowed})`]))} ORDER BY sort_time DESC, rkey DESC LIMIT ${sqlInt(plan.budget.rows + 1)}`,
      signal,
    );
    const examined = rows.slice(0, plan.budget.rows);
    const fields = requestFieldsRead(plan.query);
    const logs = fields.has("line") || fields.has("level") ? await records.withAllLines(examined, signal) : examined.map(rowToLog);
    for (const log of logs) {
      const row = logRow(log);
      if (keep(row) && !pipeline.push(row)) break;
    }
    const total = rows.length > plan.budget.rows ? await count() : undefined;
    return { rows: pipeline.finish(), source: "scan", scanned: examined.length, ...(total !== undefined ? { total } : {}), cut: pipeline.cut };
  }
}

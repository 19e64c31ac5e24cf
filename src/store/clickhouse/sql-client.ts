import { Readable } from "node:stream";
import type { ClickHouseClient } from "@clickhouse/client";
import { tsvFields } from "./rows/tab-separated.js";

/**
 * The few ways the backend talks to ClickHouse, over @clickhouse/client:
 * rows as objects, rows streamed one by one (a scan that may stop early),
 * statements, and inserts of JSON rows. A call's signal aborts its HTTP
 * request, so a cancelled Read stops waiting at once.
 */
export interface SqlClient {
  rows<T>(query: string, signal?: AbortSignal): Promise<T[]>;
  /**
   * Rows one at a time, each its fields as text (TabSeparated, unescaped:
   * far cheaper to take apart than a JSON object a row, on scans of
   * millions); leaving the loop early closes the response.
   */
  stream(query: string, signal?: AbortSignal): AsyncGenerator<string[]>;
  command(query: string, signal?: AbortSignal): Promise<void>;
  /** Inserts rows (64-bit integers as strings) in one INSERT. */
  insert(table: string, rows: readonly object[]): Promise<void>;
  /** Inserts TabSeparated text (tab-separated.ts) of these columns in one INSERT (under `queryId`, when given). */
  insertText(table: string, columns: readonly string[], text: string, queryId?: string): Promise<void>;
}

export function createSqlClient(client: ClickHouseClient): SqlClient {
  return {
    async rows<T>(query: string, signal?: AbortSignal): Promise<T[]> {
      const result = await client.query({ query, format: "JSONEachRow", abort_signal: signal });
      return result.json<T>();
    },

    async *stream(query: string, signal?: AbortSignal) {
      const result = await client.query({ query, format: "TabSeparated", abort_signal: signal });
      try {
        for await (const rows of result.stream()) {
          for (const row of rows) yield tsvFields(row.text);
        }
      } finally {
        result.close();
      }
    },

    async command(query, signal) {
      await client.command({ query, abort_signal: signal });
    },

    async insert(table, rows) {
      if (rows.length === 0) return;
      await client.insert({ table, values: rows as object[], format: "JSONEachRow" });
    },

    async insertText(table, columns, text, queryId) {
      if (text === "") return;
      await client.insert({
        table,
        query_id: queryId,
        values: Readable.from([Buffer.from(text)], { objectMode: false }),
        format: "TabSeparated",
        columns: columns as [string, ...string[]],
      });
    },
  };
}

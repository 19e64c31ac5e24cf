import type { SqlClient } from "../../src/store/clickhouse/sql-client.js";

/**
 * Counts the queries a ClickHouse backend sends that `counts` picks, through
 * the backend's `interpose` option: how a test tells which way a Read went
 * (a scan counts the rows it examines: its queries say `AS examined`).
 */
export function queryCounter(counts: (query: string) => boolean) {
  const counter = {
    seen: 0,
    interpose: (sql: SqlClient): SqlClient => ({
      ...sql,
      rows(query, signal) {
        if (counts(query)) counter.seen++;
        return sql.rows(query, signal);
      },
    }),
  };
  return counter;
}

/** A scan's queries (the rows it examines, a window at a time); a Read the search index answers has none. */
export const isScan = (query: string) => query.includes("AS examined");

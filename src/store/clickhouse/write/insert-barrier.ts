import type { SqlClient } from "../sql-client.js";
import { sqlList, sqlString } from "../rows/sql-literal.js";

/** The query id of this server's inserts: other servers find them in system.processes. */
export const insertQueryId = (server: string, n: number) => `reqlog-w-${server}-${n}`;

/** The first wait before looking again, doubled each time up to the last (an insert takes tens of ms or more). */
const firstPollMs = 5;
const lastPollMs = 80;
/** An insert still running after this long is left to itself (ClickHouse is stuck: the group goes on). */
const longestWaitMs = 60_000;

/**
 * Waits until the inserts of other reqlog servers that are running now have
 * ended. A batch sent again after its first server died (its client got no
 * answer) is written by another server: if ClickHouse had the dead server's
 * whole insert, it may still be storing it, and the re-sent write must find
 * what it stored (one record, counted once) rather than write it as new.
 */
export function createInsertBarrier(sql: SqlClient, server: string) {
  const running = (where: string) =>
    sql.rows<{ query_id: string }>(`SELECT query_id FROM system.processes WHERE ${where}`);
  return async function awaitOtherInserts(): Promise<void> {
    let ids = (await running(`query_id LIKE 'reqlog-w-%' AND query_id NOT LIKE ${sqlString(`reqlog-w-${server}-%`)}`)).map((r) => r.query_id);
    const deadline = Date.now() + longestWaitMs;
    for (let wait = firstPollMs; ids.length > 0 && Date.now() < deadline; wait = Math.min(2 * wait, lastPollMs)) {
      await new Promise((resolve) => setTimeout(resolve, wait));
      ids = (await running(`query_id IN ${sqlList(ids.map(sqlString))}`)).map((r) => r.query_id);
    }
  };
}

import { setTimeout as delay } from "node:timers/promises";
import type { SqlClient } from "../sql-client.js";
import type { TableLayout } from "../table-layout.js";

/**
 * Waits until the database's mutations are applied (on every shard, on a
 * cluster): `ALTER … DELETE` only queues one, and until ClickHouse has
 * rewritten the parts it names, the rows it deletes are still read. Stops
 * when the caller cancels.
 */
export async function mutationsDone(sql: SqlClient, layout: TableLayout, signal: AbortSignal): Promise<void> {
  while ((await sql.rows<{ n: string }>(layout.pendingMutations(), signal))[0]?.n !== "0") {
    await delay(20, undefined, { signal });
  }
}

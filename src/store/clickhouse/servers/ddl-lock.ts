import type { SqlClient } from "../sql-client.js";
import type { TableLayout } from "../table-layout.js";

/** A lock whose holder has not dropped it within this long is taken to be dead. */
const staleAfterMs = 60_000;
const retryMs = 50;

/** A lock on the database: `work` runs while no other reqlog server holds the same one. */
export type DatabaseLock = <T>(work: () => Promise<T>) => Promise<T>;

/**
 * Mutual exclusion between reqlog servers with nothing but ClickHouse:
 * `CREATE TABLE` without IF NOT EXISTS succeeds for exactly one of the
 * servers that run it at once (on a cluster, ON CLUSTER: ZooKeeper's DDL
 * queue orders them), the others being told the table exists. The holder
 * drops the table when done; a table older than a minute is a dead
 * holder's, and is dropped by the next server that wants the lock.
 * Migrations, slot claims, retention and new token ids run under it.
 */
export function createDatabaseLock(sql: SqlClient, layout: TableLayout, database: string, name: string): DatabaseLock {
  const table = `${database}.${name}`;
  const on = layout.cluster === undefined ? "" : ` ON CLUSTER ${layout.cluster}`;

  /**
   * How long the lock table has existed (0 when that cannot be told now:
   * 18.16 fails a read of system.tables that meets a table being dropped,
   * as the holder's migrations do).
   */
  async function ageMs(): Promise<number> {
    try {
      const [age] = await sql.rows<{ s: string }>(
        `SELECT toUnixTimestamp(now()) - toUnixTimestamp(metadata_modification_time) AS s FROM system.tables
         WHERE database = '${database}' AND name = '${name}'`,
      );
      return age ? Number(age.s) * 1000 : 0;
    } catch {
      return 0;
    }
  }

  async function take(): Promise<void> {
    for (;;) {
      try {
        await sql.command(`CREATE TABLE ${table}${on} (held Int64) ENGINE = Log`);
        return;
      } catch (err) {
        if (!/already exists|Code: 57\b/.test(String((err as Error).message))) throw err;
      }
      if ((await ageMs()) > staleAfterMs) await sql.command(`DROP TABLE IF EXISTS ${table}${on}`);
      else await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
  }

  return async (work) => {
    await take();
    try {
      return await work();
    } finally {
      await sql.command(`DROP TABLE IF EXISTS ${table}${on}`);
    }
  };
}

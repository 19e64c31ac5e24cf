import { randomBytes } from "node:crypto";
import { migrations } from "./migrations/index.js";
import type { SqlClient } from "./sql-client.js";
import type { DatabaseLock } from "./servers/ddl-lock.js";
import type { TableLayout } from "./table-layout.js";

/**
 * Applies the migrations the database has not recorded, in order, statement
 * by statement; a migration counts as applied once all its statements have
 * run. Then makes the database's own offset key if it has none. Statements
 * are written for the layout (one server, or every shard of a cluster).
 * `upTo` stops at a version (a test making a database as an older reqlog
 * left it).
 *
 * Every version recorded counts, not only the highest: the numbers may have
 * gaps and land out of order (a database that has 006 still gets 005).
 *
 * With `lock`, servers starting at once migrate one at a time: the first
 * migrates, the others find every version recorded and do nothing.
 */
export async function migrate(sql: SqlClient, layout: TableLayout, upTo = Infinity, lock?: DatabaseLock): Promise<void> {
  if (missing(await versionsOf(sql), upTo).length === 0 && (await hasOffsetKey(sql))) return;
  if (lock) await lock(() => migrateNow(sql, layout, upTo));
  else await migrateNow(sql, layout, upTo);
}

/** The migrations up to `upTo` that `applied` does not hold, in order. */
const missing = (applied: ReadonlySet<number>, upTo: number) => migrations.filter((m) => m.version <= upTo && !applied.has(m.version));

/**
 * The versions the database has recorded (none before its first
 * migration). EXISTS, not a read of system.tables: 18.16 fails that when it
 * meets a table another server's migration is dropping.
 */
async function versionsOf(sql: SqlClient): Promise<Set<number>> {
  const [exists] = await sql.rows<{ result: number }>("EXISTS TABLE schema_migrations");
  if (exists!.result === 0) return new Set();
  return new Set((await sql.rows<{ version: number }>("SELECT DISTINCT version FROM schema_migrations")).map((m) => m.version));
}

async function hasOffsetKey(sql: SqlClient): Promise<boolean> {
  const [key] = await sql.rows<{ n: string }>("SELECT count() AS n FROM meta WHERE key = 'offset_key'");
  return key!.n !== "0";
}

async function migrateNow(sql: SqlClient, layout: TableLayout, upTo: number): Promise<void> {
  // (Asked first: on a cluster, each DDL statement is a round of ZooKeeper's queue.)
  const applied = await versionsOf(sql);
  if (applied.size === 0) {
    for (const statement of layout.createTable("schema_migrations", "(version UInt32, name String) ENGINE = MergeTree ORDER BY version", "rand()")) {
      await sql.command(statement);
    }
  }
  for (const m of missing(applied, upTo)) {
    for (const statement of m.statements(layout)) await sql.command(statement);
    await sql.insert("schema_migrations", [{ version: m.version, name: m.name }]);
  }
  if (!(await hasOffsetKey(sql))) await sql.insert("meta", [{ key: "offset_key", value: randomBytes(32).toString("hex") }]);
}

/**
 * What the backend keeps of a database's settings: the offsets' key (the
 * lowest if two servers ever made one each, so all agree) and the floor of
 * paging history (the highest recorded: a time, µs; before migration 004 a
 * change number, far below any time).
 */
export async function loadMeta(sql: SqlClient): Promise<{ offsetKey: Uint8Array; movesFloor: bigint }> {
  const [meta] = await sql.rows<{ key: string; floor: string }>(`
    SELECT
      (SELECT min(value) FROM meta WHERE key = 'offset_key') AS key,
      (SELECT max(toUInt64(value)) FROM meta WHERE key = 'moves_floor') AS floor`);
  return { offsetKey: new Uint8Array(Buffer.from(meta!.key, "hex")), movesFloor: BigInt(meta!.floor) };
}

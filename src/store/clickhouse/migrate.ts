import { randomBytes } from "node:crypto";
import { migrations } from "./migrations/index.js";
import type { SqlClient } from "./sql-client.js";
import type { TableLayout } from "./table-layout.js";

/**
 * Applies the migrations newer than the database's version (the highest in
 * schema_migrations), in order, statement by statement; a migration counts
 * as applied once all its statements have run. Then makes the database's
 * own offset key if it has none. Statements are written for the layout
 * (one server, or every shard of a cluster). `upTo` stops at a version
 * (a test making a database as an older reqlog left it).
 */
export async function migrate(sql: SqlClient, layout: TableLayout, upTo = Infinity): Promise<void> {
  // (Asked first: on a cluster, each DDL statement is a round of ZooKeeper's queue.)
  const [exists] = await sql.rows<{ n: string }>(
    "SELECT count() AS n FROM system.tables WHERE database = currentDatabase() AND name = 'schema_migrations'",
  );
  if (exists!.n === "0") {
    for (const statement of layout.createTable("schema_migrations", "(version UInt32, name String) ENGINE = MergeTree ORDER BY version", "rand()")) {
      await sql.command(statement);
    }
  }
  // Every version recorded, not the highest: migrations landed out of order
  // (a later number first) still run on a database that has the later one.
  const applied = new Set((await sql.rows<{ version: number }>("SELECT version FROM schema_migrations")).map((m) => m.version));
  for (const m of migrations) {
    if (applied.has(m.version) || m.version > upTo) continue;
    for (const statement of m.statements(layout)) await sql.command(statement);
    await sql.insert("schema_migrations", [{ version: m.version, name: m.name }]);
  }
  const [key] = await sql.rows<{ n: string }>("SELECT count() AS n FROM meta WHERE key = 'offset_key'");
  if (key!.n === "0") await sql.insert("meta", [{ key: "offset_key", value: randomBytes(32).toString("hex") }]);
}

/**
 * What the backend keeps of a database's settings: the offsets' key (the
 * lowest if two processes ever made one each at once, so both agree), the
 * floor of paging history (the highest recorded), and the highest change
 * sequence number stored (where this process's numbers start).
 */
export async function loadMeta(sql: SqlClient): Promise<{ offsetKey: Uint8Array; movesFloor: bigint; lastSeq: bigint }> {
  const [meta] = await sql.rows<{ key: string; floor: string; seq: string }>(`
    SELECT
      (SELECT min(value) FROM meta WHERE key = 'offset_key') AS key,
      (SELECT max(toUInt64(value)) FROM meta WHERE key = 'moves_floor') AS floor,
      greatest((SELECT max(seq) FROM requests), greatest((SELECT max(seq) FROM statuses), (SELECT max(seq) FROM seq_marks))) AS seq`);
  return { offsetKey: new Uint8Array(Buffer.from(meta!.key, "hex")), movesFloor: BigInt(meta!.floor), lastSeq: BigInt(meta!.seq) };
}

import { randomBytes } from "node:crypto";
import { migrations } from "./migrations/index.js";
import type { SqlClient } from "./sql-client.js";

/**
 * Applies the migrations newer than the database's version (the highest in
 * schema_migrations), in order, statement by statement; a migration counts
 * as applied once all its statements have run. Then makes the database's
 * own offset key if it has none.
 */
export async function migrate(sql: SqlClient): Promise<void> {
  await sql.command("CREATE TABLE IF NOT EXISTS schema_migrations (version UInt32, name String) ENGINE = MergeTree ORDER BY version");
  const [applied] = await sql.rows<{ version: number }>("SELECT max(version) AS version FROM schema_migrations");
  for (const m of migrations) {
    if (m.version <= (applied?.version ?? 0)) continue;
    for (const statement of m.statements) await sql.command(statement);
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

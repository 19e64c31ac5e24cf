import { ReqlogError } from "../../reqlog-error.js";

/**
 * Where the backend's tables live and how their DDL is written: on one
 * server, each table is itself; on a cluster (a name of the servers'
 * `remote_servers`), each table is `<name>_local` on every shard, created ON
 * CLUSTER (through ZooKeeper's DDL queue), with a Distributed table `<name>`
 * over them. Queries and inserts name `<name>` either way, so reads and
 * writes are the same code on both; only DDL and ALTERs (which act on the
 * tables holding the rows) go through the layout.
 *
 * Rows that must meet (the versions of a request and its lines, the
 * versions of a status or a token) share a sharding key, so ReplacingMergeTree
 * and FINAL stay exact through the Distributed table: each shard holds all
 * versions of its keys. Rollups are sharded at random: reads sum them.
 */
export interface TableLayout {
  /** The cluster's name, on a cluster. */
  readonly cluster?: string;
  /** The statement creating the database (on every shard, on a cluster). */
  createDatabase(): string;
  /**
   * The statements creating table `name`: `definition` is its columns and
   * engine; `shardKey` places its rows on a cluster (an expression over its columns).
   */
  createTable(name: string, definition: string, shardKey: string): string[];
  /**
   * The statements creating materialized view `name` into `target`, `select`
   * written with `from(table)` for the tables it reads (their rows' tables,
   * as a view fires on the shard an insert lands on).
   */
  createView(name: string, target: string, select: (from: (table: string) => string) => string): string[];
  /** `ALTER TABLE … <action>` on the table holding `name`'s rows (on every shard, on a cluster). */
  alter(name: string, action: string): string;
  /** The statements dropping table `name` if it exists (its Distributed table and every shard's, on a cluster). */
  dropTable(name: string): string[];
  /** The statement dropping materialized view `name` if it exists (on every shard, on a cluster). */
  dropView(name: string): string;
  /** The query (a row with `n`, a string) counting the database's mutations not done yet (on every shard, on a cluster). */
  pendingMutations(): string;
}

const identifier = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** The layout of `database`, on one server or (with `cluster`) on every shard of a cluster. */
export function createTableLayout(database: string, cluster?: string): TableLayout {
  if (!identifier.test(database)) {
    throw ReqlogError.invalid(`ClickHouse database name ${JSON.stringify(database)}: letters, digits and _ only`);
  }
  const pending = (mutations: string) =>
    `SELECT toString(count()) AS n FROM ${mutations} WHERE database = '${database}' AND is_done = 0`;
  if (cluster === undefined) {
    return {
      createDatabase: () => `CREATE DATABASE IF NOT EXISTS ${database}`,
      createTable: (name, definition) => [`CREATE TABLE IF NOT EXISTS ${name} ${definition}`],
      createView: (name, target, select) => [
        `CREATE MATERIALIZED VIEW IF NOT EXISTS ${name} TO ${target} AS ${select((table) => table)}`,
      ],
      alter: (name, action) => `ALTER TABLE ${name} ${action}`,
      dropTable: (name) => [`DROP TABLE IF EXISTS ${name}`],
      dropView: (name) => `DROP TABLE IF EXISTS ${name}`,
      pendingMutations: () => pending("system.mutations"),
    };
  }
  if (!identifier.test(cluster)) {
    throw ReqlogError.invalid(`ClickHouse cluster name ${JSON.stringify(cluster)}: letters, digits and _ only`);
  }
  // Distributed DDL runs on each shard in whatever database is current there:
  // every name it writes is qualified.
  const on = `ON CLUSTER ${cluster}`;
  const local = (name: string) => `${database}.${name}_local`;
  return {
    cluster,
    createDatabase: () => `CREATE DATABASE IF NOT EXISTS ${database} ${on}`,
    createTable: (name, definition, shardKey) => [
      `CREATE TABLE IF NOT EXISTS ${local(name)} ${on} ${definition}`,
      `CREATE TABLE IF NOT EXISTS ${database}.${name} ${on} AS ${local(name)}
        ENGINE = Distributed(${cluster}, ${database}, ${name}_local, ${shardKey})`,
    ],
    createView: (name, target, select) => [
      `CREATE MATERIALIZED VIEW IF NOT EXISTS ${database}.${name} ${on} TO ${local(target)} AS ${select(local)}`,
    ],
    alter: (name, action) => `ALTER TABLE ${local(name)} ${on} ${action}`,
    dropTable: (name) => [`DROP TABLE IF EXISTS ${database}.${name} ${on}`, `DROP TABLE IF EXISTS ${local(name)} ${on}`],
    dropView: (name) => `DROP TABLE IF EXISTS ${database}.${name} ${on}`,
    // cluster(): one replica of each shard, as the ALTER's shards.
    pendingMutations: () => pending(`cluster('${cluster}', system, mutations)`),
  };
}

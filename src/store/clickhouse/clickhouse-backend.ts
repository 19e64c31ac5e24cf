import { type ClickHouseClient, ClickHouseLogLevel, createClient } from "@clickhouse/client";
import { type Clock, systemClock } from "../../clock.js";
import type { Backend } from "../store.js";
import { createChangeSequence } from "./change-sequence.js";
import { createClickHouseStatuses } from "./clickhouse-statuses.js";
import { createClickHouseStore } from "./clickhouse-store.js";
import { createClickHouseTokens } from "./clickhouse-tokens.js";
import { createGroupCommit, type GroupWork } from "./write/group-commit.js";
import { createKnownKeys, type KnownKeys } from "./write/known-keys.js";
import { loadMeta, migrate } from "./migrate.js";
import { createRecordReader } from "./read/record-reader.js";
import { createClickHouseMaintenance } from "./retention.js";
import { createSearchIndex } from "./read/search-index.js";
import { createSnapshotPaging, indexFromRows } from "./read/snapshot-paging.js";
import { createSqlClient, type SqlClient } from "./sql-client.js";
import { createTableLayout } from "./table-layout.js";
import { storageError } from "./storage-error.js";
import { createTailChanges } from "./read/tail-changes.js";
import { createWriteBatcher } from "./write/write-batcher.js";

export interface ClickHouseBackendOptions {
  /** The HTTP interface, e.g. http://127.0.0.1:8123. */
  url: string;
  /** The database (created and migrated if needed). */
  database: string;
  user?: string;
  password?: string;
  /** A cluster of the servers' remote_servers to spread the tables over (table-layout.ts). */
  cluster?: string;
  /** The clock (µs); the system clock by default. */
  now?: Clock;
  /**
   * Wraps the client every query goes through (as `now` is injected): tests
   * run writes between a Read's queries, to pin down what a race can do.
   */
  interpose?: (sql: SqlClient) => SqlClient;
  /**
   * Whether regex Reads ask the search index (migration 006) for their
   * candidates when it narrows the pattern and the range holds more than a
   * few thousand records ("auto", the default), whatever the range holds
   * ("always"), or never ("never"): how the tests compare the two.
   */
  searchIndex?: "auto" | "always" | "never";
}

/** Retention's and compaction's scans of every request may take a while on a large store. */
const requestTimeoutMs = 300_000;
/** A migration filling a table from every stored request (002's positions) reads them all. */
const migrationTimeoutMs = 6 * 3_600_000;

function clientOf(options: ClickHouseBackendOptions, database?: string, requestTimeout = requestTimeoutMs): ClickHouseClient {
  return createClient({
    url: options.url,
    username: options.user ?? "default",
    password: options.password ?? "",
    database,
    log: { level: ClickHouseLogLevel.OFF },
    // ClickHouse closes an idle keep-alive connection after keep_alive_timeout
    // (3 s by default before 23.11); a request sent on it just then fails
    // with "socket hang up". The client's default (2.5 s) leaves half a second,
    // which a busy machine's event-loop delays eat: reuse a socket only within
    // a second, and drop stale ones even when the timer fired late.
    keep_alive: { idle_socket_ttl: 1000, eagerly_destroy_stale_sockets: true },
    request_timeout: requestTimeout,
    // A group or a page names up to a thousand requests in its query text.
    clickhouse_settings: {
      max_query_size: "16777216",
      // An insert through a Distributed table returns once every shard has
      // its rows, so it is acknowledged only then and read back at once.
      ...(options.cluster !== undefined && { insert_distributed_sync: 1 }),
    },
  });
}

/** The keys of every request stored (of every version: an expired one only costs a lookup), sized for twice as many. */
async function loadKnownKeys(sql: SqlClient): Promise<KnownKeys> {
  const [stored] = await sql.rows<{ n: string }>("SELECT count() AS n FROM requests");
  const known = createKnownKeys(Math.max(1 << 20, 2 * Number(stored!.n)));
  for await (const [app, requestId] of sql.stream("SELECT app, request_id FROM requests")) known.add(app!, requestId!);
  return known;
}

/** What regex Reads ask of the search index (ClickHouseBackendOptions.searchIndex). */
function searchOf(sql: SqlClient, use: "auto" | "always" | "never") {
  return use === "never" ? undefined : { index: createSearchIndex(sql), fromRows: use === "always" ? 0 : indexFromRows };
}

/**
 * Opens (creating and migrating) a ClickHouse database as a reqlog backend.
 * One process writes a database: the change sequence lives in it (see
 * change-sequence.ts).
 */
export async function openClickHouseBackend(options: ClickHouseBackendOptions): Promise<Backend> {
  const layout = createTableLayout(options.database, options.cluster);
  const bootstrap = clientOf(options);
  try {
    // (Asked first: on a cluster, CREATE is a round of ZooKeeper's DDL queue.)
    const result = await bootstrap.query({ query: `SELECT count() FROM system.databases WHERE name = '${options.database}'`, format: "TabSeparated" });
    if ((await result.text()).trim() === "0") await bootstrap.command({ query: layout.createDatabase() });
  } catch (err) {
    throw storageError(err);
  } finally {
    await bootstrap.close();
  }
  // Migrations on a client of their own, whose requests may take hours.
  const migrator = clientOf(options, options.database, migrationTimeoutMs);
  try {
    await migrate(createSqlClient(migrator), layout);
  } catch (err) {
    throw storageError(err);
  } finally {
    await migrator.close();
  }
  const client = clientOf(options, options.database);
  const sql = (options.interpose ?? ((sql) => sql))(createSqlClient(client));
  let meta: Awaited<ReturnType<typeof loadMeta>>;
  let known: KnownKeys;
  try {
    meta = await loadMeta(sql);
    known = await loadKnownKeys(sql);
  } catch (err) {
    await client.close();
    throw storageError(err);
  }

  const now = options.now ?? systemClock;
  const seq = createChangeSequence(meta.lastSeq);
  const history = { floor: meta.movesFloor };
  const listeners = new Set<() => void>();
  const commit = createGroupCommit(sql, seq, known, layout.cluster === undefined ? "group" : "request", () => {
    for (const listener of listeners) listener();
  });
  const batcher = createWriteBatcher<GroupWork>(commit.commitGroup, (work) => work.touches.length);
  const records = createRecordReader(sql);

  return {
    store: createClickHouseStore({
      sql,
      now,
      seq,
      batcher,
      records,
      paging: createSnapshotPaging(sql, records, seq, history, now, searchOf(sql, options.searchIndex ?? "auto")),
      changes: createTailChanges(sql, records, seq),
      offsetKey: meta.offsetKey,
      listeners,
    }),
    statuses: createClickHouseStatuses(sql, seq, now),
    tokens: createClickHouseTokens(sql, now),
    maintenance: createClickHouseMaintenance(sql, layout, now, batcher, commit, seq, history),
    async close() {
      await batcher.drain();
      listeners.clear();
      await client.close();
    },
  };
}

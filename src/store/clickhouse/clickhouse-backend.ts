import { type ClickHouseClient, ClickHouseLogLevel, createClient } from "@clickhouse/client";
import { type Clock, systemClock } from "../../clock.js";
import type { Backend } from "../store.js";
import { createCommittedWrites } from "../committed-writes.js";
import { createClickHouseStatuses } from "./clickhouse-statuses.js";
import { createClickHouseStore } from "./clickhouse-store.js";
import { createClickHouseTokens } from "./clickhouse-tokens.js";
import { defaultLimits } from "../../limits.js";
import type { RequestLineCap } from "../../write/request-line-cap.js";
import { createGroupCommit, type GroupWork } from "./write/group-commit.js";
import { createKnownKeys, type KnownKeys } from "./write/known-keys.js";
import { createRequestEraser } from "./write/request-eraser.js";
import { loadMeta, migrate } from "./migrate.js";
import { createRecordReader } from "./read/record-reader.js";
import { createClickHouseMaintenance } from "./retention.js";
import { createSearchIndex } from "./read/search-index.js";
import { createSnapshotPaging, indexFromRows } from "./read/snapshot-paging.js";
import { createSqlClient, type SqlClient } from "./sql-client.js";
import { createTableLayout } from "./table-layout.js";
import { selectStoredAsWritten } from "./rows/request-row.js";
import { storageError } from "./storage-error.js";
import { createTailChanges } from "./read/tail-changes.js";
import { createWriteBatcher } from "./write/write-batcher.js";
import { createKeyFeed } from "./write/key-feed.js";
import { sameMarks, type Snapshot } from "./read/snapshot.js";
import { createDatabaseLock } from "./servers/ddl-lock.js";
import { claimServerSlot } from "./servers/server-slots.js";

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
  /** What one request may hold of app lines (default: the limits' defaults). */
  requestLines?: RequestLineCap;
  /**
   * Whether regex Reads ask the search index (migration 005) for their
   * candidates when it narrows the pattern and the range holds more than a
   * few thousand records ("auto", the default), whatever the range holds
   * ("always"), or never ("never"): how the tests compare the two.
   */
  searchIndex?: "auto" | "always" | "never";
  /**
   * Retention or compaction that another server on the database finished
   * less than this long ago is not run again (ms; 0, the default: always
   * run). `reqlog serve` passes just under its housekeeping interval.
   */
  maintenanceEveryMs?: number;
}

/** How often a server looks for other servers' new marks while a Tail is subscribed. */
const watchMs = 250;

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
  const [stored] = await sql.rows<{ n: string }>(selectStoredAsWritten("count() AS n", ""));
  const known = createKnownKeys(Math.max(1 << 20, 2 * Number(stored!.n)));
  for await (const [app, requestId] of sql.stream(selectStoredAsWritten("app, request_id", ""))) known.add(app!, requestId!);
  return known;
}

/** What regex Reads ask of the search index (ClickHouseBackendOptions.searchIndex). */
function searchOf(sql: SqlClient, use: "auto" | "always" | "never") {
  return use === "never" ? undefined : { index: createSearchIndex(sql), fromRows: use === "always" ? 0 : indexFromRows };
}

/**
 * Opens (creating and migrating) a ClickHouse database as a reqlog backend.
 * Any number of servers may open one database at once: each claims a slot
 * of its own (server-slots.ts) and finds what the others wrote in
 * ClickHouse (docs/architecture.md, "many servers, one database").
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
  // Migrations on a client of their own, whose requests may take hours; one server at a time.
  const migrator = clientOf(options, options.database, migrationTimeoutMs);
  try {
    const sql = createSqlClient(migrator);
    await migrate(sql, layout, Infinity, createDatabaseLock(sql, layout, options.database, "reqlog_lock"));
  } catch (err) {
    throw storageError(err);
  } finally {
    await migrator.close();
  }
  const client = clientOf(options, options.database);
  // (The servers' own bookkeeping, heartbeats included, goes around a test's interposer.)
  const direct = createSqlClient(client);
  const sql = (options.interpose ?? ((sql) => sql))(direct);
  const lock = createDatabaseLock(direct, layout, options.database, "reqlog_lock");
  const now = options.now ?? systemClock;
  let opened: { meta: Awaited<ReturnType<typeof loadMeta>>; slots: Awaited<ReturnType<typeof claimServerSlot>>; known: KnownKeys; marks: Snapshot };
  try {
    const meta = await loadMeta(sql);
    const slots = await claimServerSlot(direct, lock);
    // The marks first: every key they hold is then among those loaded.
    const marks = await slots.marks(now());
    opened = { meta, slots, known: await loadKnownKeys(sql), marks };
  } catch (err) {
    await client.close();
    throw storageError(err);
  }
  const { meta, slots, known } = opened;
  const feed = createKeyFeed(sql, known, slots.clock.slot);
  feed.loaded(opened.marks);

  const history = { floor: meta.movesFloor };
  const listeners = new Set<() => void>();
  const notes = createCommittedWrites();
  const notify = () => {
    for (const listener of listeners) listener();
  };
  const commit = createGroupCommit({
    sql,
    slots,
    known,
    feed,
    scope: layout.cluster === undefined ? "group" : "request",
    now,
    notes,
    cap: options.requestLines ?? defaultLimits,
    onCommit: notify,
  });
  const batcher = createWriteBatcher<GroupWork>(commit.commitGroup, (work) => work.touches.length);
  const records = createRecordReader(sql);
  const marks = () => slots.marks(now());

  // While a Tail is subscribed, other servers' commits are found by their
  // marks moving (this server's own wake it at once: onCommit).
  let watcher: NodeJS.Timeout | undefined;
  let seen: Snapshot | undefined;
  const others = (snapshot: Snapshot): Snapshot => ({
    marks: new Map([...snapshot.marks].filter(([slot]) => slot !== slots.clock.slot)),
    at: snapshot.at,
  });
  const watch = async () => {
    if (watcher) return;
    seen = others(await marks());
    watcher = setInterval(() => {
      if (listeners.size === 0) {
        clearInterval(watcher);
        watcher = undefined;
        return;
      }
      marks().then((current) => {
        const moved = !sameMarks(seen!, others(current));
        seen = others(current);
        if (moved) notify();
      }, () => {});
    }, watchMs);
    watcher.unref();
  };

  return {
    store: createClickHouseStore({
      sql,
      onCluster: layout.cluster !== undefined,
      now,
      marks,
      batcher,
      records,
      paging: createSnapshotPaging(sql, records, marks, history, now, searchOf(sql, options.searchIndex ?? "auto"), layout.cluster !== undefined),
      changes: createTailChanges(sql, records),
      offsetKey: meta.offsetKey,
      listeners,
      watch,
      notes,
      erase: createRequestEraser({ sql, layout, batcher, commit }),
    }),
    statuses: createClickHouseStatuses(sql, slots.clock, now),
    tokens: createClickHouseTokens(sql, now, lock),
    maintenance: createClickHouseMaintenance({
      sql,
      layout,
      now,
      batcher,
      commit,
      slots,
      history,
      lock: createDatabaseLock(direct, layout, options.database, "reqlog_maintenance_lock"),
      everyMs: options.maintenanceEveryMs ?? 0,
    }),
    async close() {
      await batcher.drain();
      listeners.clear();
      if (watcher) clearInterval(watcher);
      await slots.close().catch(() => {});
      await client.close();
    },
  };
}

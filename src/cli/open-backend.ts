import { systemClock } from "../clock.js";
import type { ClickHouseConfig } from "../config.js";
import { openClickHouseBackend } from "../store/clickhouse/clickhouse-backend.js";
import type { SyncMode } from "../store/sqlite/open-database.js";
import { openSqliteBackend } from "../store/sqlite/sqlite-backend.js";
import type { Backend } from "../store/store.js";
import type { RequestLineCap } from "../write/request-line-cap.js";

/** Which store a command opens: the SQLite file, or a ClickHouse database (the flags serve and token share). */
export interface StoreChoice {
  store: "sqlite" | "clickhouse";
  db: string;
  clickhouse: ClickHouseConfig;
  sync?: SyncMode;
  readWorkers?: number;
  /** What one request may hold of app lines (serve's limits); the defaults otherwise. */
  requestLines?: RequestLineCap;
}

/** Opens the backend a StoreChoice names (creating and migrating it if needed). */
export function openBackend(choice: StoreChoice): Promise<Backend> {
  if (choice.store === "clickhouse") {
    const { url, database } = choice.clickhouse;
    // Housekeeping runs every minute on each server; one run a minute is enough for all of them.
    return openClickHouseBackend({ ...choice.clickhouse, now: systemClock, maintenanceEveryMs: 55_000, requestLines: choice.requestLines }).catch((err: unknown) => {
      const cause = err instanceof Error && err.cause instanceof Error ? ` (${err.cause.message})` : "";
      throw new Error(`cannot open the ClickHouse store ${url}, database ${database}: ${(err as Error).message}${cause}`, { cause: err });
    });
  }
  return Promise.resolve(
    openSqliteBackend({
      path: choice.db,
      sync: choice.sync,
      readWorkers: choice.readWorkers,
      now: systemClock,
      requestLines: choice.requestLines,
    }),
  );
}

/** How to name a StoreChoice in messages: the flags that select it. */
export function storeFlags(choice: StoreChoice): string {
  return choice.store === "clickhouse"
    ? `--store clickhouse --clickhouse-url ${choice.clickhouse.url} --clickhouse-database ${choice.clickhouse.database}`
    : `--db ${choice.db}`;
}

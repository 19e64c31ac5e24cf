import type Database from "better-sqlite3";
import { ipInRanges, ipv4Bounds } from "../../../domain/ip-range.js";
import type { DeletePlan } from "../../../query/delete-plan.js";
import { compileRegex } from "../../../query/regex-cache.js";
import { combinedLineOf, combinedMatchArgsSql } from "../read/combined-match.js";
import type { SearchDocColumns, SearchIndex } from "../rows/search-doc.js";
import { currentSeqSql, storedRowColumnsSql } from "../rows/sql.js";
import { ipOffset, stringColumns } from "../rows/stored-record.js";
import { searchedKind, type Strings } from "../rows/strings.js";
import { throwIfCancelled } from "../storage-error.js";
import { dayOf, statsNameKind } from "../stats/stats-rollups.js";
import { type Rollups, type StoredRow, shareOf, statsShareOf } from "./rollups.js";
import { truncateWal } from "./truncate-wal.js";
import type { RunChange } from "./write-transaction.js";

/** Rows one step of the scan examines (a few ms of the main thread: writes go on between steps). */
const scanStep = 5_000;
/** Rows one transaction deletes at most (each costs its search document, rollups and freed pages). */
const deleteStep = 1000;
/**
 * Main-thread time one Delete transaction stops taking rows after (ms; its
 * rollups and COMMIT follow): a Write that arrives meanwhile waits for the
 * rest of it, then goes before the next (write-batcher.ts, `alone`).
 */
const deleteStepMs = 20;

export interface RequestEraserParts {
  db: Database.Database;
  change: RunChange;
  rollups: Rollups;
  search: SearchIndex;
  strings: Strings;
}

export type EraseRequests = (plan: DeletePlan, signal: AbortSignal, onDeleted?: (count: number) => void) => Promise<number>;

/** A deleted row as the eraser needs it: its key, shares, search document and the strings it used (leftoverColumnsSql). */
export type ErasedRow = StoredRow & SearchDocColumns & Record<string, bigint | null>;

/** Delete, and what deleted rows leave behind (Delete's and retention's). */
export interface RequestEraser {
  erase: EraseRequests;
  /**
   * Notes what a row deleted in the current transaction (retention's) leaves
   * behind: the dictionary strings and Stats names that may now be unused.
   */
  left(row: ErasedRow): void;
  /** Blanks what only deleted rows used, of those noted so far (in steps: writes go on). */
  sweep(signal: AbortSignal): Promise<void>;
}

/** The request columns that hold a key of a `strings` entry. */
const keyColumns = stringColumns.map(([column]) => column);

/** What a row to delete is selected with (after storedRowColumnsSql): the keys of the strings it uses. */
export const leftoverColumnsSql = keyColumns.map((c) => `r.${c} AS ${c}_key`).join(", ");

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Delete on SQLite. A scan finds the plan's requests a step at a time (by
 * request id, or along the app's time index); each match is deleted in a
 * transaction of a few hundred, where it is looked at again (it may have
 * changed since the scan saw it), its search document taken out and its
 * rollup shares moved, as retention does. Then the dictionary entries
 * (strings.ts) that only the deleted requests used are blanked and taken
 * out of their search index, and the write-ahead log is checkpointed and
 * truncated: with secure_delete on (open-database.ts) and the strings'
 * index's FTS5 secure-delete (migration 007), the deleted text is then in
 * neither file. (The request search index holds no text, and deletes from
 * it the ordinary way: migration 008 says why.)
 */
export function createRequestEraser({ db, change, rollups, search, strings }: RequestEraserParts): RequestEraser {
  const keyList = leftoverColumnsSql;
  // Noted by deletes, cleared by sweep: string keys, and the Stats hours of each app.
  let pendingStrings = new Set<number>();
  let pendingHours = new Map<number, Set<number>>();
  const left = (row: ErasedRow) => {
    const stats = statsShareOf(row);
    if (stats) {
      let hours = pendingHours.get(stats.appKey);
      if (!hours) pendingHours.set(stats.appKey, (hours = new Set()));
      hours.add(stats.hour);
    }
    for (const column of keyColumns) {
      const key = row[`${column}_key`];
      if (key !== null && key !== undefined) pendingStrings.add(Number(key));
    }
  };
  const stmt = {
    appKey: db.prepare("SELECT id FROM apps WHERE app_id = ?").pluck(),
    byId: db.prepare("SELECT id FROM requests WHERE app_key = ? AND request_id = ?").pluck().safeIntegers(true),
    // Keys of strings entries, for the check of which ones are still used.
    keysAfter: db
      .prepare(`SELECT r.id, ${keyList} FROM requests r WHERE r.id > ? AND r.id <= ? ORDER BY r.id LIMIT ?`)
      .raw()
      .safeIntegers(true),
    seq: db.prepare(currentSeqSql).pluck().safeIntegers(true),
    changedSince: db
      .prepare(
        `SELECT ${keyList} FROM requests r WHERE r.id > @since
         UNION ALL SELECT ${keyList} FROM requests r WHERE r.id IN (SELECT request_key FROM updates WHERE seq > @since)`,
      )
      .raw()
      .safeIntegers(true),
    stringOf: db.prepare("SELECT kind, text FROM strings WHERE id = ?"),
    unindex: db.prepare("INSERT INTO strings_search (strings_search, rowid, text) VALUES ('delete', ?, ?)"),
    // Kept as an entry (keys are never reused: a reader may hold one), its text gone.
    blank: db.prepare("UPDATE strings SET kind = -1, text = '#' || id WHERE id = ?"),
    deleteRow: db.prepare("DELETE FROM requests WHERE id = ?"),
    // Stats' names (stats-rollups.ts) that no cell counts any more: an hour's routes and user agents, a day's routes.
    dropRoutes: db.prepare(`DELETE FROM stats_names WHERE app_key = @app AND kind = ${statsNameKind.route} AND hour = @hour
      AND NOT EXISTS (SELECT 1 FROM stats_route_hours c WHERE c.app_key = @app AND c.hour = @hour AND c.route_key = stats_names.id)`),
    dropAgents: db.prepare(`DELETE FROM stats_names WHERE app_key = @app AND kind = ${statsNameKind.agent} AND hour = @hour
      AND NOT EXISTS (SELECT 1 FROM stats_agent_hours c WHERE c.agent_key = stats_names.id)`),
    dropDayRoutes: db.prepare(`DELETE FROM stats_names WHERE app_key = @app AND kind = ${statsNameKind.routeDay} AND hour = @hour
      AND NOT EXISTS (SELECT 1 FROM stats_route_days c WHERE c.app_key = @app AND c.hour = @hour AND c.route_key = stats_names.id)`),
  };

  /** What a match is decided on, for the scan and for the row again at its deletion. */
  function matcher(plan: DeletePlan, appKey: number) {
    const where = ["r.app_key = ?"];
    const args: unknown[] = [appKey];
    if (plan.startTime !== undefined) where.push("r.sort_time >= ?"), args.push(plan.startTime);
    if (plan.endTime !== undefined) where.push("r.sort_time < ?"), args.push(plan.endTime);
    const v4 = plan.ips?.filter((r) => r.family === 4).map(ipv4Bounds) ?? [];
    if (plan.ips) {
      // Dotted IPv4 addresses are stored as numbers (stored-record.ts); any other address as text, checked below.
      const ranges = v4.map(([lo, hi]) => `r.ip BETWEEN ${lo - ipOffset} AND ${hi - ipOffset}`);
      where.push(`(typeof(r.ip) = 'text'${ranges.map((r) => ` OR (typeof(r.ip) = 'integer' AND ${r})`).join("")})`);
    }
    const regex = plan.combinedRegex !== undefined ? compileRegex(plan.combinedRegex) : undefined;
    const columns = `r.id, r.ip${regex ? `, ${combinedMatchArgsSql}` : ""}`;
    const matches = (row: unknown[]) => {
      if (plan.ips && typeof row[1] === "string" && !ipInRanges(row[1], plan.ips)) return false;
      return !regex || regex.test(combinedLineOf(row.slice(2)));
    };
    const one = db.prepare(`SELECT ${columns} FROM requests r WHERE r.id = ? AND ${where.join(" AND ")}`).raw().safeIntegers(true);
    // The row again at its deletion, in one look-up: what it is matched on, then what deleting it needs (ErasedRow).
    const width = one.columns().length;
    const full = db
      .prepare(`SELECT ${columns}, ${storedRowColumnsSql}, ${keyList} FROM requests r WHERE r.id = ? AND ${where.join(" AND ")}`)
      .raw()
      .safeIntegers(true);
    const names = full.columns().map((c) => c.name);
    /** Row `id` as deleting it needs it, if it still matches. */
    const stillMatching = (id: bigint): ErasedRow | undefined => {
      const row = full.get(id, ...args) as unknown[] | undefined;
      if (!row || !matches(row)) return undefined;
      const erased: Record<string, unknown> = {};
      for (let i = width; i < names.length; i++) erased[names[i]!] = row[i];
      return erased as ErasedRow;
    };
    return { where: where.join(" AND "), args, columns, matches, one, stillMatching };
  }

  type Matcher = ReturnType<typeof matcher>;

  /** The plan's matching row ids, a step of the scan at a time. */
  async function* scan(plan: DeletePlan, appKey: number, m: Matcher, signal: AbortSignal): AsyncGenerator<bigint[]> {
    if (plan.requestIds) {
      const ids: bigint[] = [];
      for (const requestId of plan.requestIds) {
        const id = stmt.byId.get(appKey, Buffer.from(requestId)) as bigint | undefined;
        const row = id === undefined ? undefined : (m.one.get(id, ...m.args) as unknown[] | undefined);
        if (row && m.matches(row) && !ids.includes(id!)) ids.push(id!);
      }
      yield ids;
      return;
    }
    // Along the app's time index, keyset by (sort_time, id), so each step starts where the last stopped.
    const steps = (after: boolean) =>
      db
        .prepare(
          `SELECT ${m.columns}, r.sort_time FROM requests r INDEXED BY requests_by_time
           WHERE ${m.where}${after ? " AND (r.sort_time, r.id) > (?, ?)" : ""} ORDER BY r.sort_time, r.id LIMIT ${scanStep}`,
        )
        .raw()
        .safeIntegers(true);
    const first = steps(false);
    const next = steps(true);
    let after: [bigint, bigint] | undefined;
    for (;;) {
      throwIfCancelled(signal);
      const rows = (after ? next.all(...m.args, ...after) : first.all(...m.args)) as unknown[][];
      if (rows.length === 0) return;
      const last = rows.at(-1)!;
      after = [last.at(-1) as bigint, last[0] as bigint];
      yield rows.filter((row) => m.matches(row)).map((row) => row[0] as bigint);
      if (rows.length < scanStep) return;
      await nextTurn();
    }
  }

  /**
   * Deletes the rows of `ids` from `from` on that still match, in one
   * transaction of its own (all or nothing, its rollup moves in it), until
   * deleteStep rows or deleteStepMs; returns where it stopped and how many
   * it deleted, and notes the strings they used.
   */
  function deleteRows(m: Matcher, ids: readonly bigint[], from: number, signal: AbortSignal): Promise<{ next: number; deleted: number }> {
    return change(
      () => {
        const started = performance.now();
        let deleted = 0;
        let at = from;
        while (at < ids.length && deleted < deleteStep && performance.now() - started < deleteStepMs) {
          const id = ids[at++]!;
          const row = m.stillMatching(id);
          if (!row) continue;
          if (row.has_record === 1n) search.remove(row);
          stmt.deleteRow.run(id);
          rollups.move(shareOf(row), undefined);
          rollups.moveStats(statsShareOf(row), undefined);
          left(row);
          deleted++;
        }
        return { next: at, deleted };
      },
      signal,
      { alone: true },
    );
  }

  /**
   * Blanks the entries of `candidates` that no stored request uses any more:
   * a scan of every request a step at a time marks those still used; the
   * requests written or changed since it began are looked at again in the
   * transaction that blanks the rest (so none is blanked under a new use).
   */
  async function dropUnused(candidates: Set<number>, hoursByApp: Map<number, Set<number>>, signal: AbortSignal): Promise<void> {
    // Every row inserted later has an id above it, every row changed later an update above it.
    const seqAtStart = BigInt(stmt.seq.get() as bigint | number);
    const unused = new Set(candidates);
    const mark = (rows: unknown[][], from: number) => {
      for (const row of rows) for (let i = from; i < row.length; i++) if (row[i] !== null) unused.delete(Number(row[i]));
    };
    for (let after = 0n; unused.size > 0; ) {
      throwIfCancelled(signal);
      const rows = stmt.keysAfter.all(after, seqAtStart, scanStep) as unknown[][];
      if (rows.length === 0) break;
      mark(rows, 1);
      after = rows.at(-1)![0] as bigint;
      await nextTurn();
    }
    await change(() => {
      mark(stmt.changedSince.all({ since: seqAtStart }) as unknown[][], 0);
      for (const key of unused) {
        const entry = stmt.stringOf.get(key) as { kind: number; text: string } | undefined;
        if (!entry || entry.kind < 0) continue;
        if (searchedKind(entry.kind as Parameters<typeof searchedKind>[0])) stmt.unindex.run(key, entry.text);
        stmt.blank.run(key);
      }
      // The writer's cache maps texts to keys: a blanked one must be looked up (and made anew) next time.
      strings.forget();
      // Stats' routes and user agents of the hours (and days) the deleted requests were counted in, when
      // nothing counts them any more (an hour with requests left keeps its other names).
      for (const [app, hours] of hoursByApp) {
        for (const hour of hours) stmt.dropRoutes.run({ app, hour }), stmt.dropAgents.run({ app, hour });
        for (const day of new Set([...hours].map(dayOf))) stmt.dropDayRoutes.run({ app, hour: day });
      }
      // The stats rollups cache names' keys: looked up again from now on (not the group's pending moves).
      rollups.forgetStatsNames();
    }, signal);
  }

  async function sweep(signal: AbortSignal): Promise<void> {
    if (pendingStrings.size === 0 && pendingHours.size === 0) return;
    const [candidates, hours] = [pendingStrings, pendingHours];
    [pendingStrings, pendingHours] = [new Set(), new Map()];
    try {
      await dropUnused(candidates, hours, signal);
    } catch (err) {
      // Tried again at the next sweep.
      for (const key of candidates) pendingStrings.add(key);
      for (const [app, h] of hours) pendingHours.set(app, new Set([...(pendingHours.get(app) ?? []), ...h]));
      throw err;
    }
  }

  async function erase(plan: DeletePlan, signal: AbortSignal, onDeleted?: (count: number) => void): Promise<number> {
    const appKey = stmt.appKey.get(plan.appId) as number | undefined;
    if (appKey === undefined) return 0;
    let total = 0;
    const m = matcher(plan, appKey);
    for await (const ids of scan(plan, appKey, m, signal)) {
      if (plan.dryRun) {
        total += ids.length;
        continue;
      }
      for (let at = 0; at < ids.length; ) {
        // A turn between transactions: the Writes that came meanwhile are queued before the next (and go first).
        await nextTurn();
        const { next, deleted } = await deleteRows(m, ids, at, signal);
        at = next;
        total += deleted;
        if (deleted > 0) onDeleted?.(deleted);
      }
    }
    if (plan.dryRun || total === 0) return total;
    await sweep(signal);
    await truncateWal(db);
    return total;
  }

  return { erase, left, sweep };
}

import type Database from "better-sqlite3";
import { emptyHistogram, type LatencyHistogram, latencyBucket, mergeHistogram } from "../../domain/latency-histogram.js";
import type { StatsFacts } from "../../write/stats-facts.js";
import { addEncodedHistogram, encodeHistogram } from "./histogram-blob.js";

/** The kinds of name in stats_names. */
export const statsNameKind = { route: 0, agent: 1, ip: 2 } as const;
type NameKind = (typeof statsNameKind)[keyof typeof statsNameKind];

/**
 * Distinct names of one kind (routes, user agents, client IPs) with a row of
 * their own per app and hour; the requests of the others count together in
 * the kind's overflow row. It bounds the rollups of an hour whatever the
 * traffic (random paths, spoofed agents, a botnet's addresses).
 */
export const maxNamesPerHour = 1000;

/** What one finished request adds to the stats rollups. */
export interface StatsShare {
  appKey: number;
  versionKey: number;
  hour: number;
  facts: StatsFacts;
}

interface NameDelta {
  appKey: number;
  kind: NameKind;
  hour: number;
  name: string;
  requests: number;
  errors: number;
}

interface CellDelta {
  /** The keys of the cell's route and (for stats_agents_hourly) user agent in `names`. */
  route: string;
  agent?: string;
  versionKey: number;
  statusClass: number;
  requests: number;
  bytes: number;
  /** The latencies added and taken out (its max: the largest added). */
  latency: LatencyHistogram;
}

/** Where a name's requests are counted: its own row, or its kind's overflow row. */
interface NameRow {
  id: number;
  own: boolean;
}

/** The name rows of one (app, kind, hour) known to the writer. */
interface HourNames {
  rows: Map<string, NameRow>;
  /** How many names have a row of their own. */
  own: number;
  overflow: NameRow | undefined;
}

/** Most (app, kind, hour)s whose name rows the writer keeps in memory. */
const maxCachedHours = 64;

interface StoredCell {
  requests: number;
  bytes: number;
  max_latency?: number;
  latency: Buffer;
}

function sameShare(a: StatsShare, b: StatsShare): boolean {
  const f = a.facts;
  const g = b.facts;
  return (
    a.appKey === b.appKey && a.versionKey === b.versionKey && a.hour === b.hour &&
    f.route === g.route && f.statusClass === g.statusClass && f.latencyUs === g.latencyUs &&
    f.bytes === g.bytes && f.ip === g.ip && f.userAgent === g.userAgent
  );
}

/** Statements of one cell table: read, write and delete a row by its key. */
function cellTable(db: Database.Database, table: string, key: string[], withMax: boolean) {
  const where = key.map((k) => `${k} = ?`).join(" AND ");
  const columns = [...key, "requests", "bytes", ...(withMax ? ["max_latency"] : []), "latency"];
  return {
    withMax,
    get: db.prepare(`SELECT requests, bytes, ${withMax ? "max_latency, " : ""}latency FROM ${table} WHERE ${where}`),
    put: db.prepare(`INSERT OR REPLACE INTO ${table} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`),
    delete: db.prepare(`DELETE FROM ${table} WHERE ${where}`),
  };
}
type CellTable = ReturnType<typeof cellTable>;

/**
 * Keeps the stats rollups (migration 004) equal to a recount of the finished
 * requests, as rollups.ts does for usage: every change to a row takes the
 * old share out and puts the new one in; the deltas of one write are summed
 * in memory and applied by `flush` in the write's transaction.
 */
export function createStatsRollups(db: Database.Database) {
  const stmt = {
    hourNames: db.prepare("SELECT id, name FROM stats_names WHERE app_key = ? AND kind = ? AND hour = ?").raw(),
    insertName: db.prepare("INSERT INTO stats_names (app_key, kind, hour, name, requests, errors) VALUES (?, ?, ?, ?, 0, 0)"),
    addToName: db.prepare("UPDATE stats_names SET requests = requests + ?, errors = errors + ? WHERE id = ?"),
    hourTotal: db.prepare("SELECT coalesce(sum(requests), 0) FROM stats_names WHERE app_key = ? AND kind = ? AND hour = ?").pluck(),
    dropHour: db.prepare("DELETE FROM stats_names WHERE app_key = ? AND kind = ? AND hour = ?"),
  };
  const routeCells = cellTable(db, "stats_hourly", ["app_key", "hour", "route_key", "version_key", "status_class"], true);
  const agentCells = cellTable(db, "stats_agents_hourly", ["agent_key", "route_key", "version_key", "status_class"], false);

  const names = new Map<string, NameDelta>();
  const cells = new Map<string, CellDelta>();

  function nameDelta(share: StatsShare, kind: NameKind, name: string, sign: number): string {
    const key = `${share.appKey}\u0000${kind}\u0000${share.hour}\u0000${name}`;
    const d = names.get(key) ?? { appKey: share.appKey, kind, hour: share.hour, name, requests: 0, errors: 0 };
    d.requests += sign;
    if (share.facts.error) d.errors += sign;
    names.set(key, d);
    return key;
  }

  function cellDelta(key: string, init: Omit<CellDelta, "requests" | "bytes" | "latency">, facts: StatsFacts, sign: number) {
    const d = cells.get(key) ?? { ...init, requests: 0, bytes: 0, latency: emptyHistogram() };
    d.requests += sign;
    d.bytes += sign * facts.bytes;
    const { latency } = d;
    if (sign > 0 && facts.latencyUs > latency.max) latency.max = facts.latencyUs;
    const bucket = latencyBucket(facts.latencyUs);
    latency.counts.set(bucket, (latency.counts.get(bucket) ?? 0) + sign);
    cells.set(key, d);
  }

  function accumulate(share: StatsShare, sign: 1 | -1): void {
    const { facts } = share;
    const route = nameDelta(share, statsNameKind.route, facts.route, sign);
    const agent = nameDelta(share, statsNameKind.agent, facts.userAgent, sign);
    nameDelta(share, statsNameKind.ip, facts.ip, sign);
    const cell = { route, versionKey: share.versionKey, statusClass: facts.statusClass };
    const cellKey = `${route}\u0000${share.versionKey}\u0000${facts.statusClass}`;
    cellDelta(cellKey, cell, facts, sign);
    cellDelta(`${cellKey}\u0000${agent}`, { ...cell, agent }, facts, sign);
  }

  /** Applies a cell's delta to its stored row: the row goes when its requests reach 0. */
  function applyCell(table: CellTable, key: number[], d: CellDelta): void {
    const changed = d.requests !== 0 || d.bytes !== 0 || d.latency.max > 0 || [...d.latency.counts.values()].some((n) => n !== 0);
    if (!changed) return;
    const row = table.get.get(...key) as StoredCell | undefined;
    const requests = (row?.requests ?? 0) + d.requests;
    if (requests <= 0) {
      if (row) table.delete.run(...key);
      return;
    }
    const histogram = emptyHistogram();
    if (row) addEncodedHistogram(histogram, row.latency);
    mergeHistogram(histogram, d.latency);
    const max = Math.max(row?.max_latency ?? 0, d.latency.max);
    const values = [...key, requests, (row?.bytes ?? 0) + d.bytes, ...(table.withMax ? [max] : []), encodeHistogram(histogram.counts)];
    table.put.run(...values);
  }

  /**
   * The name rows of each (app, kind, hour) a write touched, all of them
   * (read once, at most 1,001 a kind), kept across writes: a batch of one
   * hour's traffic finds its names here, and a new name (most client IPs)
   * is known to be new without a lookup. Rows go only with their hour
   * (dropHour) or a rollback, so entries stay true until `discard` or the
   * hour's drop.
   */
  const hours = new Map<string, HourNames>();

  const hourKeyOf = (d: NameDelta) => `${d.appKey}/${d.kind}/${d.hour}`;

  /**
   * Where a name's requests are counted. A name keeps its row while its
   * hour counts any request, so one without a row has none counted, or
   * all of them in the overflow row (the hour's rows were full when it
   * came): it gets a row only when it comes with requests and there is room.
   */
  function rowOf(key: string): NameRow | undefined {
    const d = names.get(key)!;
    const hourKey = hourKeyOf(d);
    let known = hours.get(hourKey);
    if (!known) hours.set(hourKey, (known = loadHour(d)));
    let row = known.rows.get(d.name);
    if (!row) {
      row = newRow(d, known);
      if (row) known.rows.set(d.name, row);
    }
    return row;
  }

  /** All the name rows of an hour (at most maxNamesPerHour and the overflow): a name not among them has none. */
  function loadHour(d: NameDelta): HourNames {
    const known: HourNames = { rows: new Map(), own: 0, overflow: undefined };
    for (const [id, name] of stmt.hourNames.all(d.appKey, d.kind, d.hour) as [number, string | null][]) {
      if (name === null) {
        known.overflow = { id, own: false };
      } else {
        known.rows.set(name, { id, own: true });
        known.own++;
      }
    }
    return known;
  }

  function newRow(d: NameDelta, known: HourNames): NameRow | undefined {
    if (d.requests <= 0) return known.overflow;
    if (known.own < maxNamesPerHour) {
      known.own++;
      return { id: Number(stmt.insertName.run(d.appKey, d.kind, d.hour, d.name).lastInsertRowid), own: true };
    }
    return (known.overflow ??= { id: Number(stmt.insertName.run(d.appKey, d.kind, d.hour, null).lastInsertRowid), own: false });
  }

  return {
    /** Moves a request's share from `before` (absent: it did not count) to `after` (absent: it no longer counts). */
    move(before: StatsShare | undefined, after: StatsShare | undefined): void {
      // A record written again as it was (a retried write) changes nothing.
      if (before && after && sameShare(before, after)) return;
      if (before) accumulate(before, -1);
      if (after) accumulate(after, 1);
    },

    /** Applies the pending deltas (inside the write's transaction). */
    flush(): void {
      if (names.size === 0) return;
      /** Hours (one name delta each stands for its app, kind and hour) whose counts went down. */
      const shrunk = new Map<string, NameDelta>();
      for (const [key, d] of names) {
        if (d.requests === 0 && d.errors === 0) continue;
        const row = rowOf(key);
        if (!row) continue;
        stmt.addToName.run(d.requests, d.errors, row.id);
        if (d.requests < 0) shrunk.set(hourKeyOf(d), d);
      }
      for (const d of cells.values()) {
        const route = rowOf(d.route);
        if (!route) continue;
        const { appKey, hour } = names.get(d.route)!;
        if (d.agent === undefined) {
          applyCell(routeCells, [appKey, hour, route.id, d.versionKey, d.statusClass], d);
        } else {
          // The overflow user agents are never matched by a pattern: no split for them.
          const agent = rowOf(d.agent);
          if (agent?.own) applyCell(agentCells, [agent.id, route.id, d.versionKey, d.statusClass], d);
        }
      }
      // An hour that counts no request any more gives its names' rows back.
      for (const [hourKey, { appKey, kind, hour }] of shrunk) {
        if (stmt.hourTotal.get(appKey, kind, hour) === 0) {
          stmt.dropHour.run(appKey, kind, hour);
          hours.delete(hourKey);
        }
      }
      names.clear();
      cells.clear();
      // Live traffic writes to the last hour or two: the names of older hours are let go.
      for (const hourKey of hours.keys()) {
        if (hours.size <= maxCachedHours) break;
        hours.delete(hourKey);
      }
    },

    /**
     * Drops the pending deltas of a write that failed, and the rows known:
     * those the write (or its group, when the group did not commit) inserted
     * are rolled back with it.
     */
    discard(): void {
      names.clear();
      cells.clear();
      hours.clear();
    },
  };
}

export type StatsRollups = ReturnType<typeof createStatsRollups>;

import type Database from "better-sqlite3";
import { emptyHistogram, type LatencyHistogram, latencyBucket, mergeHistogram } from "../../domain/latency-histogram.js";
import { addToTopNames, emptyTopNames, type TopNames } from "../../domain/top-names.js";
import type { StatsFacts } from "../../write/stats-facts.js";
import { addEncodedHistogram, encodeHistogram } from "./histogram-blob.js";
import { decodeTopNames, encodeTopNames } from "./top-names-blob.js";

/** The kinds of name in stats_names. */
export const statsNameKind = { route: 0, agent: 1, routeDay: 2 } as const;
type NameKind = (typeof statsNameKind)[keyof typeof statsNameKind];

/** The kinds of summary in stats_top_names. */
export const topNameKind = { ip: 0, agent: 1 } as const;
type TopKind = (typeof topNameKind)[keyof typeof topNameKind];

export const hoursPerDay = 24;

/** The first hour of the (UTC) day of an hour. */
export const dayOf = (hour: number) => Math.floor(hour / hoursPerDay) * hoursPerDay;

/**
 * Distinct routes and user agents with a row of their own per app and hour;
 * the requests of the others count together under the kind's overflow row.
 * It bounds the rollups of an hour whatever the traffic (random paths,
 * spoofed agents).
 */
export const maxNamesPerHour = 1000;

/** A day's routes are those of its hours: never more than this, so no bound of their own. */
const maxNames: Record<NameKind, number> = { 0: maxNamesPerHour, 1: maxNamesPerHour, 2: Infinity };

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
}

/** What a write adds to (or takes from) one cell: requests, bytes, latencies (its max: the largest added). */
interface CellDelta {
  requests: number;
  bytes: number;
  latency: LatencyHistogram;
}

/** A cell of an hour's route (a key in `names`), for the tables keyed by route. */
interface RouteCellDelta extends CellDelta {
  route: string;
  versionKey: number;
  statusClass: number;
  /** stats_agent_hours: the user agent's key in `names`. */
  agent?: string;
}

interface ClassCellDelta extends CellDelta {
  appKey: number;
  hour: number;
  statusClass: number;
}

/** What a write adds to the top names of one (app, kind, period). */
interface TopDelta {
  appKey: number;
  kind: TopKind;
  hours: number;
  hour: number;
  requests: number;
  names: Map<string, { requests: number; errors: number }>;
}

/** Where a name's requests are counted: its own row, or its kind's overflow row. */
interface NameRow {
  id: number;
  own: boolean;
}

/** The name rows of one (app, kind, hour or day) known to the writer. */
interface PeriodNames {
  rows: Map<string, NameRow>;
  /** How many names have a row of their own. */
  own: number;
  overflow: NameRow | undefined;
}

/** Most (app, kind, period)s whose name rows, and most summaries, the writer keeps in memory. */
const maxCachedPeriods = 64;

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

/** Adds one request's share (or takes it out) of a cell. */
function addToCell(d: CellDelta, facts: StatsFacts, sign: number): void {
  d.requests += sign;
  d.bytes += sign * facts.bytes;
  const { latency } = d;
  if (sign > 0 && facts.latencyUs > latency.max) latency.max = facts.latencyUs;
  const bucket = latencyBucket(facts.latencyUs);
  const count = (latency.counts.get(bucket) ?? 0) + sign;
  if (count === 0) latency.counts.delete(bucket);
  else latency.counts.set(bucket, count);
}

const noDelta = (): CellDelta => ({ requests: 0, bytes: 0, latency: emptyHistogram() });

function mergeDelta(into: CellDelta, from: CellDelta): void {
  into.requests += from.requests;
  into.bytes += from.bytes;
  mergeHistogram(into.latency, from.latency);
}

/**
 * Keeps the stats rollups (migration 005) equal to a recount of the finished
 * requests, as rollups.ts does for usage: every change to a row takes the
 * old share out and puts the new one in; the deltas of one write are summed
 * in memory and applied by `flush` in the write's transaction, so a write of
 * a thousand requests of one hour touches each cell of a table once.
 */
export function createStatsRollups(db: Database.Database) {
  const stmt = {
    periodNames: db.prepare("SELECT id, name FROM stats_names WHERE app_key = ? AND kind = ? AND hour = ?").raw(),
    insertName: db.prepare("INSERT INTO stats_names (app_key, kind, hour, name) VALUES (?, ?, ?, ?)"),
    dropNames: db.prepare("DELETE FROM stats_names WHERE app_key = ? AND kind = ? AND hour = ?"),
    hourCounts: db.prepare("SELECT 1 FROM stats_class_hours WHERE app_key = ? AND hour = ? LIMIT 1").pluck(),
    dayCounts: db.prepare("SELECT 1 FROM stats_route_days WHERE app_key = ? AND hour = ? LIMIT 1").pluck(),
    getTop: db.prepare("SELECT requests, summary FROM stats_top_names WHERE app_key = ? AND kind = ? AND hours = ? AND hour = ?"),
    putTop: db.prepare("INSERT OR REPLACE INTO stats_top_names (app_key, kind, hours, hour, requests, summary) VALUES (?, ?, ?, ?, ?, ?)"),
    dropTop: db.prepare("DELETE FROM stats_top_names WHERE app_key = ? AND kind = ? AND hours = ? AND hour = ?"),
  };
  const tables = {
    versions: cellTable(db, "stats_version_hours", ["app_key", "version_key", "hour", "route_key", "status_class"], true),
    routes: cellTable(db, "stats_route_hours", ["app_key", "hour", "route_key", "status_class"], true),
    classes: cellTable(db, "stats_class_hours", ["app_key", "hour", "status_class"], true),
    days: cellTable(db, "stats_route_days", ["app_key", "hour", "route_key", "status_class"], true),
    agents: cellTable(db, "stats_agent_hours", ["agent_key", "route_key", "version_key", "status_class"], false),
  };

  const names = new Map<string, NameDelta>();
  /** stats_version_hours and stats_agent_hours deltas (the latter with `agent`). */
  const versionCells = new Map<string, RouteCellDelta>();
  /** stats_route_hours deltas (versionKey unused); stats_route_days' are made from them. */
  const routeCells = new Map<string, RouteCellDelta>();
  const classCells = new Map<string, ClassCellDelta>();
  const tops = new Map<string, TopDelta>();

  function nameDelta(share: StatsShare, kind: NameKind, name: string, sign: number): string {
    const key = `${share.appKey}\u0000${kind}\u0000${share.hour}\u0000${name}`;
    const d = names.get(key);
    if (d) d.requests += sign;
    else names.set(key, { appKey: share.appKey, kind, hour: share.hour, name, requests: sign });
    return key;
  }

  function cellDelta<T extends CellDelta>(cells: Map<string, T>, key: string, init: () => Omit<T, keyof CellDelta>, facts: StatsFacts, sign: number) {
    let d = cells.get(key);
    if (!d) cells.set(key, (d = { ...init(), ...noDelta() } as T));
    addToCell(d, facts, sign);
  }

  function topDelta(share: StatsShare, kind: TopKind, hours: number, name: string, sign: number): void {
    const hour = hours === 1 ? share.hour : dayOf(share.hour);
    const key = `${share.appKey}\u0000${kind}\u0000${hours}\u0000${hour}`;
    let d = tops.get(key);
    if (!d) tops.set(key, (d = { appKey: share.appKey, kind, hours, hour, requests: 0, names: new Map() }));
    d.requests += sign;
    const n = d.names.get(name) ?? { requests: 0, errors: 0 };
    n.requests += sign;
    if (share.facts.error) n.errors += sign;
    d.names.set(name, n);
  }

  function accumulate(share: StatsShare, sign: 1 | -1): void {
    const { facts } = share;
    const route = nameDelta(share, statsNameKind.route, facts.route, sign);
    const agent = nameDelta(share, statsNameKind.agent, facts.userAgent, sign);
    const { appKey, hour, versionKey } = share;
    const { statusClass } = facts;
    const versionKeyText = `${route}\u0000${versionKey}\u0000${statusClass}`;
    cellDelta(versionCells, versionKeyText, () => ({ route, versionKey, statusClass }), facts, sign);
    cellDelta(versionCells, `${versionKeyText}\u0000${agent}`, () => ({ route, versionKey, statusClass, agent }), facts, sign);
    cellDelta(routeCells, `${route}\u0000${statusClass}`, () => ({ route, versionKey: 0, statusClass }), facts, sign);
    cellDelta(classCells, `${appKey}\u0000${hour}\u0000${statusClass}`, () => ({ appKey, hour, statusClass }), facts, sign);
    for (const hours of [1, hoursPerDay]) {
      topDelta(share, topNameKind.ip, hours, facts.ip, sign);
      topDelta(share, topNameKind.agent, hours, facts.userAgent, sign);
    }
  }

  /** Applies a cell's delta to its stored row: the row goes when its requests reach 0. */
  function applyCell(table: CellTable, key: number[], d: CellDelta): void {
    const changed = d.requests !== 0 || d.bytes !== 0 || d.latency.max > 0 || d.latency.counts.size > 0;
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
   * The name rows of each (app, kind, period) a write touched, all of them
   * (read once, at most 1,001 a kind and hour), kept across writes: a batch
   * of one hour's traffic finds its names here, and a new name is known to
   * be new without a lookup. Rows go only with their period (dropped in
   * `flush`, which drops the entry) or a rollback (`discard` forgets them all).
   */
  const periods = new Map<string, PeriodNames>();
  /** The top-names summaries a write touched, decoded, with their period's requests, kept the same way. */
  const summaries = new Map<string, { requests: number; summary: TopNames }>();

  /** Lets go of the oldest entries beyond the bound: live traffic writes to the last hour or two. */
  function trim(cache: Map<string, unknown>): void {
    for (const key of cache.keys()) {
      if (cache.size <= maxCachedPeriods) break;
      cache.delete(key);
    }
  }

  function periodNames(appKey: number, kind: NameKind, hour: number): PeriodNames {
    const key = `${appKey}/${kind}/${hour}`;
    let known = periods.get(key);
    if (!known) {
      known = { rows: new Map(), own: 0, overflow: undefined };
      for (const [id, name] of stmt.periodNames.all(appKey, kind, hour) as [number, string | null][]) {
        if (name === null) {
          known.overflow = { id, own: false };
        } else {
          known.rows.set(name, { id, own: true });
          known.own++;
        }
      }
      periods.set(key, known);
    }
    return known;
  }

  function overflowRow(known: PeriodNames, appKey: number, kind: NameKind, hour: number): NameRow {
    return (known.overflow ??= { id: Number(stmt.insertName.run(appKey, kind, hour, null).lastInsertRowid), own: false });
  }

  /**
   * Where a name's requests of a period are counted. A name keeps its row
   * while its hour counts any request, so one without a row has none
   * counted, or all of them in the overflow row (the hour's rows were full
   * when it came): it gets a row only when it comes with requests and there
   * is room.
   */
  function rowOf(appKey: number, kind: NameKind, hour: number, name: string, requests: number): NameRow | undefined {
    const known = periodNames(appKey, kind, hour);
    let row = known.rows.get(name);
    if (row) return row;
    if (requests <= 0) return known.overflow;
    if (known.own >= maxNames[kind]) return overflowRow(known, appKey, kind, hour);
    known.own++;
    row = { id: Number(stmt.insertName.run(appKey, kind, hour, name).lastInsertRowid), own: true };
    known.rows.set(name, row);
    return row;
  }

  const nameRow = (key: string) => {
    const d = names.get(key)!;
    return rowOf(d.appKey, d.kind, d.hour, d.name, d.requests);
  };

  /** A day's row for an hour's route row: the route's own, or the day's overflow row with the hour's. */
  function dayRouteRow(route: NameDelta, hourRow: NameRow, requests: number): NameRow | undefined {
    const day = dayOf(route.hour);
    if (hourRow.own) return rowOf(route.appKey, statsNameKind.routeDay, day, route.name, requests);
    const known = periodNames(route.appKey, statsNameKind.routeDay, day);
    return requests > 0 ? overflowRow(known, route.appKey, statsNameKind.routeDay, day) : known.overflow;
  }

  function applyTop(d: TopDelta): void {
    const key = `${d.appKey}/${d.kind}/${d.hours}/${d.hour}`;
    let known = summaries.get(key);
    if (!known) {
      const row = stmt.getTop.get(d.appKey, d.kind, d.hours, d.hour) as { requests: number; summary: Buffer } | undefined;
      known = row ? { requests: row.requests, summary: decodeTopNames(row.summary) } : { requests: 0, summary: emptyTopNames() };
      summaries.set(key, known);
    }
    if (d.requests === 0 && [...d.names.values()].every((n) => n.requests === 0 && n.errors === 0)) return;
    known.requests += d.requests;
    if (known.requests <= 0) {
      stmt.dropTop.run(d.appKey, d.kind, d.hours, d.hour);
      summaries.delete(key);
      return;
    }
    for (const [name, n] of d.names) if (n.requests !== 0 || n.errors !== 0) addToTopNames(known.summary, name, n.requests, n.errors);
    stmt.putTop.run(d.appKey, d.kind, d.hours, d.hour, known.requests, encodeTopNames(known.summary));
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
      // Rows for the names that come first, in the order they came (who gets a row when an hour fills up).
      for (const key of names.keys()) nameRow(key);
      for (const d of versionCells.values()) {
        const route = nameRow(d.route);
        if (!route) continue;
        const { appKey, hour } = names.get(d.route)!;
        if (d.agent === undefined) {
          applyCell(tables.versions, [appKey, d.versionKey, hour, route.id, d.statusClass], d);
        } else {
          // The overflow user agents are never matched by a pattern: no split for them.
          const agent = nameRow(d.agent);
          if (agent?.own) applyCell(tables.agents, [agent.id, route.id, d.versionKey, d.statusClass], d);
        }
      }
      const dayCells = new Map<string, { key: number[]; delta: CellDelta }>();
      /** (app, hour)s and (app, day)s that lost requests: their names go if they count none any more. */
      const shrunk = new Map<string, { appKey: number; hour: number }>();
      for (const d of routeCells.values()) {
        const routeName = names.get(d.route)!;
        const route = nameRow(d.route);
        if (!route) continue;
        applyCell(tables.routes, [routeName.appKey, routeName.hour, route.id, d.statusClass], d);
        const day = dayRouteRow(routeName, route, d.requests);
        if (!day) continue;
        const key = [routeName.appKey, dayOf(routeName.hour), day.id, d.statusClass];
        const keyText = key.join("/");
        const sum = dayCells.get(keyText) ?? { key, delta: noDelta() };
        mergeDelta(sum.delta, d);
        dayCells.set(keyText, sum);
      }
      for (const { key, delta } of dayCells.values()) applyCell(tables.days, key, delta);
      for (const d of classCells.values()) {
        applyCell(tables.classes, [d.appKey, d.hour, d.statusClass], d);
        if (d.requests < 0) shrunk.set(`${d.appKey}/${d.hour}`, d);
      }
      for (const d of tops.values()) applyTop(d);

      // An hour or day that counts no request any more gives its names' rows back.
      const days = new Map<string, { appKey: number; day: number }>();
      for (const { appKey, hour } of shrunk.values()) {
        days.set(`${appKey}/${dayOf(hour)}`, { appKey, day: dayOf(hour) });
        if (stmt.hourCounts.get(appKey, hour) !== undefined) continue;
        for (const kind of [statsNameKind.route, statsNameKind.agent]) {
          stmt.dropNames.run(appKey, kind, hour);
          periods.delete(`${appKey}/${kind}/${hour}`);
        }
      }
      for (const { appKey, day } of days.values()) {
        if (stmt.dayCounts.get(appKey, day) !== undefined) continue;
        stmt.dropNames.run(appKey, statsNameKind.routeDay, day);
        periods.delete(`${appKey}/${statsNameKind.routeDay}/${day}`);
      }
      names.clear();
      versionCells.clear();
      routeCells.clear();
      classCells.clear();
      tops.clear();
      trim(periods);
      trim(summaries);
    },

    /**
     * Drops the pending deltas of a write that failed, and the rows and
     * summaries known: those the write (or its group, when the group did not
     * commit) changed are rolled back with it.
     */
    discard(): void {
      names.clear();
      versionCells.clear();
      routeCells.clear();
      classCells.clear();
      tops.clear();
      periods.clear();
      summaries.clear();
    },
  };
}

export type StatsRollups = ReturnType<typeof createStatsRollups>;

import type Database from "better-sqlite3";
import { latencyBucket } from "../../../domain/latency-histogram.js";
import { addToTopNames, emptyTopNames, type TopNames } from "../../../domain/top-names.js";
import type { StatsFacts } from "../../../write/stats-facts.js";
import { addToSparse, encodeSparse, type SparseCounts, sparseCountsOf } from "../rows/histogram-blob.js";
import { decodeTopNames, encodeTopNames } from "../rows/top-names-blob.js";

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

/**
 * An (app, hour) or (app, day) as one number, a Map key that costs no
 * string: hours since the epoch stay below 2^24 until the year 3884.
 */
const periodOf = (appKey: number, hour: number) => appKey * 0x1000000 + hour;

/** A route or user agent of one app and hour that a write counts. */
interface NameDelta {
  /** Its number in this write: the cells' keys use it. */
  id: number;
  appKey: number;
  kind: NameKind;
  hour: number;
  name: string;
  requests: number;
  /** Where its requests are counted, once `flush` has found it. */
  row?: NameRow | undefined;
}

/** What a write adds to (or takes from) one cell: requests, bytes, latencies. */
interface CellDelta {
  requests: number;
  bytes: number;
  /** The largest latency added. */
  max: number;
  /** The latency bucket of each request added, and ~bucket (negative) of each taken out. */
  buckets: number[];
}

/** A cell of stats_version_hours (`agent` unset) or stats_agent_hours. */
interface VersionCellDelta extends CellDelta {
  route: NameDelta;
  versionKey: number;
  statusClass: number;
  agent?: NameDelta;
}

/** A cell of stats_route_hours; stats_route_days' are made from them. */
interface RouteCellDelta extends CellDelta {
  route: NameDelta;
  statusClass: number;
}

/** A cell of stats_class_hours, or of stats_hours (`statusClass` unset). */
interface ClassCellDelta extends CellDelta {
  appKey: number;
  hour: number;
  statusClass?: number;
}

/** What a write adds to the top names of one (app, kind, hour): the days' are made from them. */
interface TopDelta {
  appKey: number;
  kind: TopKind;
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

/**
 * Most cells the writer keeps decoded (a few buckets each, 125 at most). Live traffic moves
 * the cells of its hour and day over and over: each is read from its table
 * once, then only written.
 */
const maxCachedCells = 4096;

interface StoredCell {
  requests: number;
  bytes: number;
  max_latency?: number;
  latency: Buffer;
}

/** A cell as stored, decoded: what the writer knows of it (its counts sparse). */
interface KnownCell {
  requests: number;
  bytes: number;
  max: number;
  counts: SparseCounts;
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
    table,
    withMax,
    get: db.prepare(`SELECT requests, bytes, ${withMax ? "max_latency, " : ""}latency FROM ${table} WHERE ${where}`),
    put: db.prepare(`INSERT OR REPLACE INTO ${table} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`),
    delete: db.prepare(`DELETE FROM ${table} WHERE ${where}`),
  };
}
type CellTable = ReturnType<typeof cellTable>;

/** Adds one request's share (or takes it out) of a cell. */
function addToCell(d: CellDelta, facts: StatsFacts, bucket: number, sign: number): void {
  d.requests += sign;
  d.bytes += sign * facts.bytes;
  if (sign > 0 && facts.latencyUs > d.max) d.max = facts.latencyUs;
  d.buckets.push(sign > 0 ? bucket : ~bucket);
}

function mergeDelta(into: CellDelta, from: CellDelta): void {
  into.requests += from.requests;
  into.bytes += from.bytes;
  if (from.max > into.max) into.max = from.max;
  for (const b of from.buckets) into.buckets.push(b);
}

/**
 * Keeps the stats rollups (migration 005) equal to a recount of the finished
 * requests, as rollups.ts does for usage: every change to a row takes the
 * old share out and puts the new one in; the deltas of one write are summed
 * in memory and applied by `flush` in the write's transaction, so a write of
 * a thousand requests of one hour touches each cell of a table once. A
 * request costs a few Map updates here; allocation is kept low (numbers and
 * short keys), as it is most of this path's cost.
 */
export function createStatsRollups(db: Database.Database): StatsRollups {
  const stmt = {
    periodNames: db.prepare("SELECT id, name FROM stats_names WHERE app_key = ? AND kind = ? AND hour = ?").raw(),
    insertName: db.prepare("INSERT INTO stats_names (app_key, kind, hour, name) VALUES (?, ?, ?, ?)"),
    dropNames: db.prepare("DELETE FROM stats_names WHERE app_key = ? AND kind = ? AND hour = ?"),
    hourCounts: db.prepare("SELECT 1 FROM stats_hours WHERE app_key = ? AND hour = ?").pluck(),
    dayCounts: db.prepare("SELECT 1 FROM stats_route_days WHERE app_key = ? AND hour = ? LIMIT 1").pluck(),
    getTop: db.prepare("SELECT requests, summary FROM stats_top_names WHERE app_key = ? AND kind = ? AND hours = ? AND hour = ?"),
    putTop: db.prepare(
      "INSERT OR REPLACE INTO stats_top_names (app_key, kind, hours, hour, requests, version, summary) VALUES (?, ?, ?, ?, ?, ?, ?)",
    ),
    lastVersion: db.prepare("SELECT coalesce(max(version), 0) FROM stats_top_names").pluck(),
    dropTop: db.prepare("DELETE FROM stats_top_names WHERE app_key = ? AND kind = ? AND hours = ? AND hour = ?"),
  };
  const tables = {
    versions: cellTable(db, "stats_version_hours", ["app_key", "version_key", "hour", "route_key", "status_class"], true),
    routes: cellTable(db, "stats_route_hours", ["app_key", "hour", "route_key", "status_class"], true),
    hours: cellTable(db, "stats_hours", ["app_key", "hour"], true),
    classes: cellTable(db, "stats_class_hours", ["app_key", "hour", "status_class"], true),
    days: cellTable(db, "stats_route_days", ["app_key", "hour", "route_key", "status_class"], true),
    agents: cellTable(db, "stats_agent_hours", ["agent_key", "route_key", "version_key", "status_class"], false),
  };

  // The pending deltas of the write under way.
  /** Routes and user agents by (app, hour), then name, in the order they came. */
  const names: Record<0 | 1, Map<number, Map<string, NameDelta>>> = { 0: new Map(), 1: new Map() };
  let nameCount = 0;
  const versionCells = new Map<string, VersionCellDelta>();
  const routeCells = new Map<string, RouteCellDelta>();
  const classCells = new Map<string, ClassCellDelta>();
  const hourCells = new Map<number, ClassCellDelta>();
  /** Client IPs' and user agents' by (app, hour). */
  const tops: Record<TopKind, Map<number, TopDelta>> = { 0: new Map(), 1: new Map() };

  function nameDelta(share: StatsShare, kind: 0 | 1, name: string, sign: number): NameDelta {
    const period = periodOf(share.appKey, share.hour);
    let byName = names[kind].get(period);
    if (!byName) names[kind].set(period, (byName = new Map()));
    let d = byName.get(name);
    if (!d) byName.set(name, (d = { id: nameCount++, appKey: share.appKey, kind, hour: share.hour, name, requests: 0 }));
    d.requests += sign;
    return d;
  }

  /** The pending delta of a cell (made when missing, with `init`'s fields). */
  function cell<T extends CellDelta>(cells: Map<string, T>, key: string, init: Omit<T, keyof CellDelta>): T {
    let d = cells.get(key);
    if (!d) cells.set(key, (d = Object.assign(init, { requests: 0, bytes: 0, max: 0, buckets: [] }) as unknown as T));
    return d;
  }

  function topDelta(share: StatsShare, kind: TopKind, name: string, sign: number): void {
    const period = periodOf(share.appKey, share.hour);
    let d = tops[kind].get(period);
    if (!d) tops[kind].set(period, (d = { appKey: share.appKey, kind, hour: share.hour, requests: 0, names: new Map() }));
    d.requests += sign;
    let n = d.names.get(name);
    if (!n) d.names.set(name, (n = { requests: 0, errors: 0 }));
    n.requests += sign;
    if (share.facts.error) n.errors += sign;
  }

  function accumulate(share: StatsShare, sign: 1 | -1): void {
    const { facts, appKey, hour, versionKey } = share;
    const { statusClass } = facts;
    const route = nameDelta(share, statsNameKind.route, facts.route, sign);
    const agent = nameDelta(share, statsNameKind.agent, facts.userAgent, sign);
    const bucket = latencyBucket(facts.latencyUs);
    const versionKeyText = `${route.id}/${versionKey}/${statusClass}`;
    addToCell(cell(versionCells, versionKeyText, { route, versionKey, statusClass }), facts, bucket, sign);
    addToCell(cell(versionCells, `${versionKeyText}/${agent.id}`, { route, versionKey, statusClass, agent }), facts, bucket, sign);
    addToCell(cell(routeCells, `${route.id}/${statusClass}`, { route, statusClass }), facts, bucket, sign);
    addToCell(cell(classCells, `${appKey}/${hour}/${statusClass}`, { appKey, hour, statusClass }), facts, bucket, sign);
    const period = periodOf(appKey, hour);
    let hourCell = hourCells.get(period);
    if (!hourCell) hourCells.set(period, (hourCell = { appKey, hour, requests: 0, bytes: 0, max: 0, buckets: [] }));
    addToCell(hourCell, facts, bucket, sign);
    topDelta(share, topNameKind.ip, facts.ip, sign);
    topDelta(share, topNameKind.agent, facts.userAgent, sign);
  }

  /** The cells known, by table and key; null: known to have no row. */
  const knownCells = new Map<string, KnownCell | null>();

  function loadCell(table: CellTable, key: readonly (number | Buffer)[]): KnownCell | null {
    const row = table.get.get(...key) as StoredCell | undefined;
    if (!row) return null;
    return { requests: row.requests, bytes: row.bytes, max: row.max_latency ?? 0, counts: sparseCountsOf(row.latency) };
  }

  /** Applies a cell's delta to its stored row: the row goes when its requests reach 0. */
  function applyCell(table: CellTable, key: (number | Buffer)[], d: CellDelta): void {
    if (d.requests === 0 && d.bytes === 0 && d.max === 0 && d.buckets.length === 0) return;
    const cacheKey = `${table.table}/${key.join("/")}`;
    let known = knownCells.get(cacheKey);
    if (known === undefined) known = loadCell(table, key);
    // Moved to the end: the cells used last are kept longest. (The key's values follow it into the statement.)
    knownCells.delete(cacheKey);
    const requests = (known?.requests ?? 0) + d.requests;
    if (requests <= 0) {
      if (known) table.delete.run(...key);
      knownCells.set(cacheKey, null);
      return;
    }
    known ??= { requests: 0, bytes: 0, max: 0, counts: sparseCountsOf() };
    known.requests = requests;
    known.bytes += d.bytes;
    if (d.max > known.max) known.max = d.max;
    for (const b of d.buckets) {
      if (b < 0) addToSparse(known.counts, ~b, -1);
      else addToSparse(known.counts, b, 1);
    }
    key.push(requests, known.bytes);
    if (table.withMax) key.push(known.max);
    key.push(encodeSparse(known.counts));
    table.put.run(...key);
    knownCells.set(cacheKey, known);
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
  /**
   * The version the last summary written was given: every write of a summary
   * gives it a new one, never given before (in this database), so that a
   * reader that keeps summaries decoded knows which ones changed.
   */
  let version = stmt.lastVersion.get() as number;

  /** Lets go of the oldest entries beyond the bound: live traffic writes to the last hour or two. */
  function trim(cache: Map<string, unknown>, bound: number): void {
    for (const key of cache.keys()) {
      if (cache.size <= bound) break;
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

  /** A day's row for an hour's route row: the route's own, or the day's overflow row with the hour's. */
  function dayRouteRow(route: NameDelta, hourRow: NameRow, requests: number): NameRow | undefined {
    const day = dayOf(route.hour);
    if (hourRow.own) return rowOf(route.appKey, statsNameKind.routeDay, day, route.name, requests);
    const known = periodNames(route.appKey, statsNameKind.routeDay, day);
    return requests > 0 ? overflowRow(known, route.appKey, statsNameKind.routeDay, day) : known.overflow;
  }

  /** Applies a write's name deltas to the summary of one (app, kind, hour or day). */
  function applyTop(appKey: number, kind: TopKind, hours: number, hour: number, requests: number, deltas: Map<string, { requests: number; errors: number }>): void {
    const key = `${appKey}/${kind}/${hours}/${hour}`;
    let known = summaries.get(key);
    if (!known) {
      const row = stmt.getTop.get(appKey, kind, hours, hour) as { requests: number; summary: Buffer } | undefined;
      known = row ? { requests: row.requests, summary: decodeTopNames(row.summary) } : { requests: 0, summary: emptyTopNames() };
      summaries.set(key, known);
    }
    let changed = requests !== 0;
    for (const n of deltas.values()) changed ||= n.requests !== 0 || n.errors !== 0;
    if (!changed) return;
    known.requests += requests;
    if (known.requests <= 0) {
      stmt.dropTop.run(appKey, kind, hours, hour);
      summaries.delete(key);
      return;
    }
    for (const [name, n] of deltas) if (n.requests !== 0 || n.errors !== 0) addToTopNames(known.summary, name, n.requests, n.errors);
    stmt.putTop.run(appKey, kind, hours, hour, known.requests, ++version, encodeTopNames(known.summary));
  }

  function clearPending(): void {
    names[0].clear();
    names[1].clear();
    nameCount = 0;
    versionCells.clear();
    routeCells.clear();
    classCells.clear();
    hourCells.clear();
    tops[0].clear();
    tops[1].clear();
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
      if (nameCount === 0) return;
      // Rows for the names that come first, in the order they came (who gets a row when an hour fills up).
      for (const kind of [statsNameKind.route, statsNameKind.agent] as const) {
        for (const byName of names[kind].values()) {
          for (const d of byName.values()) d.row = rowOf(d.appKey, d.kind, d.hour, d.name, d.requests);
        }
      }
      for (const d of versionCells.values()) {
        const { route } = d;
        if (!route.row) continue;
        if (d.agent === undefined) {
          applyCell(tables.versions, [route.appKey, d.versionKey, route.hour, route.row.id, d.statusClass], d);
        } else if (d.agent.row?.own) {
          // The overflow user agents are never matched by a pattern: no split for them.
          applyCell(tables.agents, [d.agent.row.id, route.row.id, d.versionKey, d.statusClass], d);
        }
      }
      const dayCells = new Map<string, { key: (number | Buffer)[]; delta: CellDelta }>();
      for (const d of routeCells.values()) {
        const { route } = d;
        if (!route.row) continue;
        applyCell(tables.routes, [route.appKey, route.hour, route.row.id, d.statusClass], d);
        const day = dayRouteRow(route, route.row, d.requests);
        if (!day) continue;
        const keyText = `${route.appKey}/${dayOf(route.hour)}/${day.id}/${d.statusClass}`;
        let sum = dayCells.get(keyText);
        if (!sum) {
          sum = { key: [route.appKey, dayOf(route.hour), day.id, d.statusClass], delta: { requests: 0, bytes: 0, max: 0, buckets: [] } };
          dayCells.set(keyText, sum);
        }
        mergeDelta(sum.delta, d);
      }
      for (const { key, delta } of dayCells.values()) applyCell(tables.days, key, delta);
      /** (app, hour)s that lost requests: their names go if they count none any more (and their days' too). */
      const shrunk: { appKey: number; hour: number }[] = [];
      for (const d of classCells.values()) applyCell(tables.classes, [d.appKey, d.hour, d.statusClass!], d);
      for (const d of hourCells.values()) {
        applyCell(tables.hours, [d.appKey, d.hour], d);
        if (d.requests < 0) shrunk.push(d);
      }
      for (const kind of [topNameKind.ip, topNameKind.agent] as const) {
        const days = new Map<number, TopDelta>();
        for (const d of tops[kind].values()) {
          applyTop(d.appKey, kind, 1, d.hour, d.requests, d.names);
          const period = periodOf(d.appKey, dayOf(d.hour));
          const day = days.get(period);
          if (!day) {
            days.set(period, { ...d, hour: dayOf(d.hour), names: new Map(d.names) });
            continue;
          }
          day.requests += d.requests;
          for (const [name, n] of d.names) {
            const sum = day.names.get(name);
            day.names.set(name, sum ? { requests: sum.requests + n.requests, errors: sum.errors + n.errors } : n);
          }
        }
        for (const d of days.values()) applyTop(d.appKey, kind, hoursPerDay, d.hour, d.requests, d.names);
      }

      // An hour or day that counts no request any more gives its names' rows back.
      const days = new Map<string, { appKey: number; day: number }>();
      for (const { appKey, hour } of shrunk) {
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
      clearPending();
      trim(periods, maxCachedPeriods);
      trim(summaries, maxCachedPeriods);
      trim(knownCells, maxCachedCells);
    },

    /**
     * Drops the pending deltas of a write that failed, and the rows, cells
     * and summaries known: those the write (or its group, when the group did
     * not commit) changed are rolled back with it.
     */
    discard(): void {
      clearPending();
      periods.clear();
      summaries.clear();
      knownCells.clear();
    },

    forgetNames(): void {
      periods.clear();
    },
  };
}

export interface StatsRollups {
  /**
   * Moves a request's share from `before` (absent: it did not count) to `after` (absent: it no longer counts).
   */
  move(before: StatsShare | undefined, after: StatsShare | undefined): void;
  /** Applies the pending deltas (inside the write's transaction). */
  flush(): void;
  /**
   * Drops the pending deltas of a write that failed, and the rows, cells
   * and summaries known: those the write (or its group, when the group did
   * not commit) changed are rolled back with it.
   */
  discard(): void;
  /** Forgets the names' keys known (looked up again): Delete has dropped names nothing counts (request-eraser.ts). */
  forgetNames(): void;
}

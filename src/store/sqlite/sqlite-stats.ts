import type Database from "better-sqlite3";
import { emptyHistogram, type LatencyHistogram } from "../../domain/latency-histogram.js";
import { compileRegex } from "../../query/read-plan.js";
import { type StatsPlan, statsTooLarge } from "../../query/stats-plan.js";
import type { StatsClient, StatsRecord, StatsResult } from "../store.js";
import { addEncodedHistogram } from "./histogram-blob.js";
import { createAppLookup } from "./keys.js";
import { statsNameKind } from "./stats-rollups.js";

/** A stats_hourly row, read raw (an array: building an object per row costs more than reading it). */
type CellRow = [hour: number, routeKey: number, versionKey: number, statusClass: number, requests: number, bytes: number, maxLatency: number, latency: Buffer];

/** A stats_agents_hourly row: what one user agent adds to one cell of stats_hourly. */
interface AgentCellRow {
  route_key: number;
  version_key: number;
  status_class: number;
  requests: number;
  bytes: number;
  latency: Buffer;
}

/** What the user agents a bot pattern matches add to one cell of stats_hourly. */
interface Excluded {
  requests: number;
  bytes: number;
  blobs: Buffer[];
}

const byName = (a: string | undefined, b: string | undefined) =>
  a === b ? 0 : a === undefined ? 1 : b === undefined ? -1 : a < b ? -1 : 1;

function recordOrder(a: StatsRecord, b: StatsRecord): number {
  return (
    a.startHour - b.startHour ||
    byName(a.route, b.route) ||
    a.statusClass - b.statusClass ||
    byName(a.moduleId, b.moduleId) ||
    byName(a.versionId, b.versionId)
  );
}

/**
 * Stats from the rollups alone (migration 004): the work is one row per
 * (hour, route, version, status class) in the range, plus, with a bot
 * pattern, the rows of the user agents it matches; never a request row.
 */
export function createStatsReader(db: Database.Database) {
  const appKey = createAppLookup(db);
  const stmt = {
    range: db.prepare("SELECT min(hour) AS first, max(hour) AS last FROM stats_names WHERE app_key = ? AND kind = ?"),
    versions: db.prepare("SELECT id, module_id, version_id FROM versions WHERE app_key = ?"),
    cells: db
      .prepare(`
        SELECT hour, route_key, version_key, status_class, requests, bytes, max_latency, latency
        FROM stats_hourly WHERE app_key = ? AND hour >= ? AND hour < ?`)
      .raw(),
    names: db.prepare("SELECT id, hour, name FROM stats_names WHERE app_key = ? AND kind = ? AND hour >= ? AND hour < ?").raw(),
    agentCells: db.prepare(
      "SELECT route_key, version_key, status_class, requests, bytes, latency FROM stats_agents_hourly WHERE agent_key = ?",
    ),
    top: db.prepare(`
      SELECT name, sum(requests) AS requests, sum(errors) AS errors FROM stats_names
      WHERE app_key = ? AND kind = ? AND hour >= ? AND hour < ?
      GROUP BY name HAVING sum(requests) > 0
      ORDER BY requests DESC, name IS NULL, name`),
  };

  /** The keys of the app's versions the plan counts, with their names. */
  function versionsOf(app: number, plan: StatsPlan) {
    const all = stmt.versions.all(app) as { id: number; module_id: string; version_id: string }[];
    const wanted = all.filter(
      (v) =>
        !plan.versions ||
        plan.versions.some((p) => p.moduleId === v.module_id && (p.versionId === undefined || p.versionId === v.version_id)),
    );
    return new Map(wanted.map((v) => [v.id, { moduleId: v.module_id, versionId: v.version_id }]));
  }

  /** Whether a user agent is one the plan leaves out (each name tested once). */
  function botTest(plan: StatsPlan): (name: string) => boolean {
    if (plan.excludeUserAgents === undefined) return () => false;
    const re = compileRegex(plan.excludeUserAgents);
    const seen = new Map<string, boolean>();
    return (name) => {
      let matched = seen.get(name);
      if (matched === undefined) seen.set(name, (matched = re.test(name)));
      return matched;
    };
  }

  /** The share of each stats_hourly cell that the matched user agents make, by `hour/route/version/class`. */
  function excludedCells(app: number, start: number, end: number, isBot: (name: string) => boolean) {
    const excluded = new Map<string, Excluded>();
    for (const [id, hour, name] of stmt.names.all(app, statsNameKind.agent, start, end) as [number, number, string | null][]) {
      if (name === null || !isBot(name)) continue;
      for (const c of stmt.agentCells.all(id) as AgentCellRow[]) {
        const key = `${hour}/${c.route_key}/${c.version_key}/${c.status_class}`;
        const e = excluded.get(key) ?? { requests: 0, bytes: 0, blobs: [] };
        e.requests += c.requests;
        e.bytes += c.bytes;
        e.blobs.push(c.latency);
        excluded.set(key, e);
      }
    }
    return excluded;
  }

  function topClients(app: number, kind: number, start: number, end: number, n: number, leaveOut: (name: string) => boolean) {
    const top: StatsClient[] = [];
    if (n === 0) return top;
    for (const row of stmt.top.iterate(app, kind, start, end) as IterableIterator<{ name: string | null; requests: number; errors: number }>) {
      if (row.name !== null && leaveOut(row.name)) continue;
      top.push({ ...(row.name !== null ? { name: row.name } : {}), requests: row.requests, errors: row.errors });
      if (top.length === n) break;
    }
    return top;
  }

  return function stats(plan: StatsPlan): StatsResult {
    const app = appKey(plan.appId);
    const empty: StatsResult = { records: [], startHour: plan.startHour, endHour: plan.endHour, clientIps: [], userAgents: [] };
    if (app === undefined) return empty;
    const stored = stmt.range.get(app, statsNameKind.route) as { first: number | null; last: number | null };
    const start = plan.startHour ?? stored.first;
    const end = plan.endHour ?? (stored.last === null ? null : stored.last + 1);
    if (start === null || end === null || start >= end) return empty;

    const versions = versionsOf(app, plan);
    const classes = plan.statusClasses && new Set(plan.statusClasses);
    const isBot = botTest(plan);
    const excluded = plan.excludeUserAgents === undefined ? undefined : excludedCells(app, start, end, isBot);
    const width = plan.resolutionHours === 0 ? end - start : plan.resolutionHours;
    const routes = new Map<number, string | null>();
    for (const [id, , name] of stmt.names.all(app, statsNameKind.route, start, end) as [number, number, string | null][]) {
      routes.set(id, name);
    }
    const records = new Map<string, StatsRecord>();

    for (const cell of stmt.cells.iterate(app, start, end) as IterableIterator<CellRow>) {
      const [hour, routeKey, versionKey, statusClass] = cell;
      const version = versions.get(versionKey);
      if (!version || (classes && !classes.has(statusClass))) continue;
      const bots = excluded?.get(`${hour}/${routeKey}/${versionKey}/${statusClass}`);
      const requests = cell[4] - (bots?.requests ?? 0);
      if (requests <= 0) continue;
      const index = Math.floor((hour - start) / width);
      const route = routes.get(routeKey) ?? undefined;
      const key = `${index}\u0000${route ?? "\u0000"}\u0000${statusClass}\u0000${plan.perVersion ? versionKey : ""}`;
      let record = records.get(key);
      if (!record) {
        // Bounded: an open range over a year of many routes stops here, not at the end.
        if (records.size === plan.maxRecords) throw statsTooLarge(plan.maxRecords, `more than ${plan.maxRecords}`);
        const startHour = start + index * width;
        record = {
          startHour,
          endHour: Math.min(startHour + width, end),
          ...(route !== undefined ? { route } : {}),
          statusClass,
          ...(plan.perVersion ? version : {}),
          requests: 0,
          errors: 0,
          bytes: 0,
          latency: emptyHistogram(),
        };
        records.set(key, record);
      }
      record.requests += requests;
      if (statusClass === 5) record.errors += requests;
      record.bytes += cell[5] - (bots?.bytes ?? 0);
      addCell(record.latency, cell, bots);
    }

    const ordered = [...records.values()].sort(recordOrder);
    return {
      records: ordered,
      startHour: start,
      endHour: end,
      clientIps: topClients(app, statsNameKind.ip, start, end, plan.topN, () => false),
      userAgents: topClients(app, statsNameKind.agent, start, end, plan.topN, isBot),
    };
  };
}

/**
 * Adds a cell's latencies, less those of the excluded user agents, to a
 * record's histogram. The cell's max may be a left-out request's: it is an
 * upper bound all the same, which histogramMax brings within the highest
 * bucket still in use.
 */
function addCell(into: LatencyHistogram, [, , , , , , maxLatency, latency]: CellRow, bots: Excluded | undefined): void {
  addEncodedHistogram(into, latency);
  for (const blob of bots?.blobs ?? []) addEncodedHistogram(into, blob, -1);
  if (maxLatency > into.max) into.max = maxLatency;
}


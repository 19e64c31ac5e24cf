import type Database from "better-sqlite3";
import { emptyHistogram, latencyBucketCount } from "../../../domain/latency-histogram.js";
import { statusClassCount } from "../../../domain/stats-figures.js";
import { type TopNames, topNamesOf } from "../../../domain/top-names.js";
import { compileRegex } from "../../../query/read-plan.js";
import { ReqlogError } from "../../../reqlog-error.js";
import { checkStatsBuckets, type StatsPlan, statsTooLarge } from "../../../query/stats-plan.js";
import type { StatsBucket, StatsFigures, StatsRecord, StatsResult } from "../../store.js";
import { addEncodedCounts, decodeHistogramCounts } from "../rows/histogram-blob.js";
import { createAppLookup } from "../rows/keys.js";
import { dayOf, hoursPerDay, statsNameKind, topNameKind } from "./stats-rollups.js";
import { decodeTopNames } from "../rows/top-names-blob.js";

/**
 * A cell as every cell table is read (raw, an array: building an object per
 * row costs more than reading it); the tables without a route or a version
 * read 0 in its place.
 */
type Cell = [hour: number, routeKey: number, versionKey: number, statusClass: number, requests: number, bytes: number, maxLatency: number, latency: Buffer];

/** What the user agents a bot pattern matches add to one cell. */
interface Excluded {
  requests: number;
  bytes: number;
  blobs: Buffer[];
}

/**
 * The tables a question can be answered from, coarsest last: the cells of
 * each version, of each route (versions merged), of each status class
 * (routes merged too). `days` are the route cells of whole days.
 */
type Level = "versions" | "routes" | "classes";

/** A stretch of the range read from hourly cells, or from the day cells of whole days. */
interface Segment {
  from: number;
  to: number;
  days: boolean;
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
 * The range cut into buckets of `width` hours, each read from the day cells
 * for the whole days in it (when `days`) and from hourly cells for the rest;
 * adjacent hourly stretches are joined.
 */
function segmentsOf(start: number, end: number, width: number, days: boolean): Segment[] {
  const segments: Segment[] = [];
  const add = (from: number, to: number, daily: boolean) => {
    if (from >= to) return;
    const last = segments.at(-1);
    if (last && !last.days && !daily && last.to === from) last.to = to;
    else segments.push({ from, to, days: daily });
  };
  for (let bucket = start; bucket < end; bucket += width) {
    const bucketEnd = Math.min(bucket + width, end);
    const firstDay = Math.ceil(bucket / hoursPerDay) * hoursPerDay;
    const lastDay = Math.floor(bucketEnd / hoursPerDay) * hoursPerDay;
    if (!days || firstDay >= lastDay) {
      add(bucket, bucketEnd, false);
    } else {
      add(bucket, firstDay, false);
      add(firstDay, lastDay, true);
      add(lastDay, bucketEnd, false);
    }
  }
  return segments;
}

/**
 * Figures being summed. The latencies of a sum of one cell are that cell's
 * blob, decoded once at the end (an hourly chart's buckets are one row
 * each); from a second cell on they are summed dense by bucket (adding to
 * an array costs less than to a Map). `figuresOf` makes them StatsFigures.
 */
interface Sum {
  requests: number;
  errors: number;
  bytes: number;
  max: number;
  one?: Buffer | undefined;
  counts?: Float64Array | undefined;
}

/** The latencies records, buckets and routes are made with until setFigures gives them theirs (never changed itself). */
const noLatency = emptyHistogram();

const newSum = (): Sum => ({ requests: 0, errors: 0, bytes: 0, max: 0, one: undefined, counts: undefined });

/** Sets a sum's figures on `into` (a record, bucket or route made with placeholders): no object spread, thousands a call. */
function setFigures<T extends StatsFigures>(into: T, sum: Sum): T {
  const latency = emptyHistogram();
  latency.max = sum.max;
  if (sum.one) {
    latency.counts = decodeHistogramCounts(sum.one);
  } else if (sum.counts) {
    const { counts } = sum;
    for (let bucket = 0; bucket < counts.length; bucket++) if (counts[bucket] !== 0) latency.counts.set(bucket, counts[bucket]!);
  }
  into.requests = sum.requests;
  into.errors = sum.errors;
  into.bytes = sum.bytes;
  into.latency = latency;
  return into;
}

/**
 * Adds a cell, less what the excluded user agents make of it, to a sum. The
 * cell's max may be a left-out request's: it is an upper bound all the same,
 * which histogramMax brings within the highest bucket still in use.
 */
function addCell(into: Sum, cell: Cell, requests: number, bots: Excluded | undefined): void {
  const [, , , statusClass, , bytes, maxLatency, latency] = cell;
  into.requests += requests;
  if (statusClass === 5) into.errors += requests;
  into.bytes += bytes - (bots?.bytes ?? 0);
  if (maxLatency > into.max) into.max = maxLatency;
  if (!into.counts && !into.one && !bots) {
    into.one = latency;
    return;
  }
  if (!into.counts) {
    into.counts = new Float64Array(latencyBucketCount);
    if (into.one) addEncodedCounts(into.counts, into.one);
    into.one = undefined;
  }
  addEncodedCounts(into.counts, latency);
  for (const blob of bots?.blobs ?? []) addEncodedCounts(into.counts, blob, -1);
}

/** The longest range whose time series is answered on the calling thread: a month, rounded out to hours, and some. */
const inlineHours = 32 * 24;

/**
 * Whether a plan reads few rows: the time series (no records) of at most a
 * month, with nothing filtered that makes it read the hourly cells of each
 * route, version or user agent. That is a few rows an hour and each route's
 * days (a few thousand rows, a few ms): less than handing the call to a read
 * worker and its answer back costs. Anything else may read hundreds of
 * thousands of rows and runs on a worker.
 */
export function readsFewRows(plan: StatsPlan): boolean {
  return (
    !plan.records &&
    plan.versions === undefined &&
    !plan.perVersion &&
    plan.excludeUserAgents === undefined &&
    plan.startHour !== undefined &&
    plan.endHour !== undefined &&
    plan.endHour - plan.startHour <= inlineHours
  );
}

/** How many cells a Stats walks between two looks at its cancel flag. */
const cancelCheckEvery = 1024;

/** Most top-names summaries a reader keeps decoded (a few KB each): a month's days and its ends' hours, for a few apps. */
const maxCachedSummaries = 1024;

/**
 * Stats from the rollups alone (migration 005), from the coarsest table
 * that answers exactly: the time series from one row per hour; a route's
 * figures over a range from one row per day for its whole days; the top
 * lists from one bounded summary per day (and hour, at the range's ends).
 * Filtering versions reads the cells of each version; a bot pattern takes
 * the rows of the user agents it matches out of the hourly cells. Never a
 * request row. A call reads in one transaction: every figure of an answer
 * is of the same commit.
 */
export function createStatsReader(db: Database.Database) {
  const appKey = createAppLookup(db);
  const cellColumns = "status_class, requests, bytes, max_latency, latency";
  const stmt = {
    range: db.prepare("SELECT min(hour) AS first, max(hour) AS last FROM stats_hours WHERE app_key = ?"),
    hours: db.prepare(`SELECT hour, 0, 0, -1, requests, bytes, max_latency, latency FROM stats_hours WHERE app_key = ? AND hour >= ? AND hour < ?`).raw(),
    classRequests: db.prepare("SELECT hour, status_class, requests FROM stats_class_hours WHERE app_key = ? AND hour >= ? AND hour < ?").raw(),
    versions: db.prepare("SELECT id, module_id, version_id FROM versions WHERE app_key = ?"),
    cells: {
      versions: db
        .prepare(`SELECT hour, route_key, version_key, ${cellColumns} FROM stats_version_hours
          WHERE app_key = ? AND version_key = ? AND hour >= ? AND hour < ?`)
        .raw(),
      routes: db.prepare(`SELECT hour, route_key, 0, ${cellColumns} FROM stats_route_hours WHERE app_key = ? AND hour >= ? AND hour < ?`).raw(),
      classes: db.prepare(`SELECT hour, 0, 0, ${cellColumns} FROM stats_class_hours WHERE app_key = ? AND hour >= ? AND hour < ?`).raw(),
      days: db.prepare(`SELECT hour, route_key, 0, ${cellColumns} FROM stats_route_days WHERE app_key = ? AND hour >= ? AND hour < ?`).raw(),
    },
    names: db.prepare("SELECT id, hour, name FROM stats_names WHERE app_key = ? AND kind = ? AND hour >= ? AND hour < ?").raw(),
    agentCells: db
      .prepare("SELECT route_key, version_key, status_class, requests, bytes, latency FROM stats_agent_hours WHERE agent_key = ?")
      .raw(),
    topVersions: db.prepare("SELECT hour, version FROM stats_top_names WHERE app_key = ? AND kind = ? AND hours = ? AND hour >= ? AND hour < ?").raw(),
    topSummary: db.prepare("SELECT summary FROM stats_top_names WHERE app_key = ? AND kind = ? AND hours = ? AND hour = ?").pluck(),
  };

  /**
   * Top-names summaries decoded before, with the version they were read at:
   * the summaries of past hours and days seldom change, and decoding a
   * month's (thousands of names) is most of a top list's cost.
   */
  const decoded = new Map<string, { version: number; summary: TopNames }>();

  /** The summaries of one app, kind and period length in [from, to), each decoded once per version. */
  function summariesOf(app: number, kind: number, hours: number, from: number, to: number): TopNames[] {
    const found: TopNames[] = [];
    for (const [hour, version] of stmt.topVersions.all(app, kind, hours, hours === 1 ? from : dayOf(from), to) as [number, number][]) {
      const key = `${app}/${kind}/${hours}/${hour}`;
      let known = decoded.get(key);
      if (known?.version !== version) known = { version, summary: decodeTopNames(stmt.topSummary.get(app, kind, hours, hour) as Buffer) };
      // Moved to the end: the summaries used last are kept longest.
      decoded.delete(key);
      decoded.set(key, known);
      found.push(known.summary);
    }
    for (const key of decoded.keys()) {
      if (decoded.size <= maxCachedSummaries) break;
      decoded.delete(key);
    }
    return found;
  }

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

  /** A cell's key at a level: what the excluded user agents' shares are summed by. */
  const cellKey = (level: Level, hour: number, routeKey: number, versionKey: number, statusClass: number) =>
    level === "versions"
      ? `${hour}/${routeKey}/${versionKey}/${statusClass}`
      : level === "routes"
        ? `${hour}/${routeKey}/${statusClass}`
        : `${hour}/${statusClass}`;

  /** The share of each cell of `level` that the matched user agents make. */
  function excludedCells(app: number, start: number, end: number, level: Level, isBot: (name: string) => boolean) {
    const excluded = new Map<string, Excluded>();
    for (const [id, hour, name] of stmt.names.all(app, statsNameKind.agent, start, end) as [number, number, string | null][]) {
      if (name === null || !isBot(name)) continue;
      for (const [routeKey, versionKey, statusClass, requests, bytes, latency] of stmt.agentCells.all(id) as [number, number, number, number, number, Buffer][]) {
        const key = cellKey(level, hour, routeKey, versionKey, statusClass);
        const e = excluded.get(key) ?? { requests: 0, bytes: 0, blobs: [] };
        e.requests += requests;
        e.bytes += bytes;
        e.blobs.push(latency);
        excluded.set(key, e);
      }
    }
    return excluded;
  }

  function answer(plan: StatsPlan, cancel: Int32Array | undefined): StatsResult {
    /** Cells walked since the cancel flag was last looked at (the first cell looks). */
    let sinceCheck = cancelCheckEvery - 1;
    const stopIfCancelled = () => {
      if (++sinceCheck < cancelCheckEvery) return;
      sinceCheck = 0;
      if (cancel !== undefined && Atomics.load(cancel, 0) === 1) throw ReqlogError.cancelled();
    };
    const app = appKey(plan.appId);
    const empty: StatsResult = { records: [], buckets: [], startHour: plan.startHour, endHour: plan.endHour, routes: [], clientIps: [], userAgents: [] };
    if (app === undefined) return empty;
    const stored = stmt.range.get(app) as { first: number | null; last: number | null };
    const start = plan.startHour ?? stored.first;
    const end = plan.endHour ?? (stored.last === null ? null : stored.last + 1);
    if (start === null || end === null || start >= end) return empty;
    checkStatsBuckets(start, end, plan.resolutionHours, plan.maxRecords);

    const versions = versionsOf(app, plan);
    const classes = plan.statusClasses && new Set(plan.statusClasses);
    const isBot = botTest(plan);
    const bots = plan.excludeUserAgents !== undefined;
    const versionsMerged = plan.versions === undefined && !plan.perVersion;
    /** The hourly table for records split `byRoute` (or not). */
    const hourly = (byRoute: boolean): Level => (!versionsMerged ? "versions" : byRoute ? "routes" : "classes");
    const excluded = new Map<Level, Map<string, Excluded>>();
    const excludedAt = (level: Level) => {
      let e = excluded.get(level);
      if (!e) excluded.set(level, (e = bots ? excludedCells(app, start, end, level, isBot) : new Map()));
      return e;
    };

    /** Route names by key, loaded for the periods read. */
    const routeNames = new Map<number, string | null>();
    const loadNames = (kind: number, from: number, to: number) => {
      for (const [id, , name] of stmt.names.all(app, kind, from, to) as [number, number, string | null][]) routeNames.set(id, name);
    };

    /** Each cell of the range's segments, with its requests less the excluded ones' (cells left with none are skipped). */
    function eachCell(segments: Segment[], level: Level, withNames: boolean, visit: (cell: Cell, requests: number, bots: Excluded | undefined) => void) {
      const minus = excludedAt(level);
      for (const s of segments) {
        const table = s.days ? "days" : level;
        if (withNames) loadNames(s.days ? statsNameKind.routeDay : statsNameKind.route, s.from, s.to);
        const rows =
          table === "versions"
            ? [...versions.keys()].flatMap((v) => stmt.cells.versions.all(app, v, s.from, s.to) as Cell[])
            : (stmt.cells[table].all(app, s.from, s.to) as Cell[]);
        for (const cell of rows) {
          stopIfCancelled();
          const [hour, routeKey, versionKey, statusClass, requests] = cell;
          if (classes && !classes.has(statusClass)) continue;
          const b = s.days ? undefined : minus.get(cellKey(level, hour, routeKey, versionKey, statusClass));
          const left = requests - (b?.requests ?? 0);
          if (left > 0) visit(cell, left, b);
        }
      }
    }

    const width = plan.resolutionHours === 0 ? end - start : plan.resolutionHours;
    /** A new record or bucket: bounded, so an open range over a year of many routes stops here, not at the end. */
    const bounded = (size: number) => {
      if (size === plan.maxRecords) throw statsTooLarge(plan.maxRecords, `more than ${plan.maxRecords}`);
    };
    const records = new Map<string, { record: StatsRecord; sum: Sum }>();
    const buckets = new Map<number, { bucket: StatsBucket; sum: Sum }>();
    const bucketOf = (hour: number) => {
      const index = Math.floor((hour - start) / width);
      let entry = buckets.get(index);
      if (!entry) {
        if (!plan.records) bounded(buckets.size);
        const startHour = start + index * width;
        const endHour = Math.min(startHour + width, end);
        const classRequests = new Array<number>(statusClassCount).fill(0);
        const bucket: StatsBucket = { startHour, endHour, classRequests, requests: 0, errors: 0, bytes: 0, latency: noLatency };
        buckets.set(index, (entry = { bucket, sum: newSum() }));
      }
      return entry;
    };
    const recordLevel = hourly(plan.byRoute);
    if (plan.records) {
      eachCell(segmentsOf(start, end, width, recordLevel === "routes" && !bots), recordLevel, plan.byRoute, (cell, requests, b) => {
        const [hour, routeKey, versionKey, statusClass] = cell;
        const index = Math.floor((hour - start) / width);
        const route = plan.byRoute ? (routeNames.get(routeKey) ?? undefined) : undefined;
        const key = `${index}\u0000${route ?? "\u0000"}\u0000${statusClass}\u0000${plan.perVersion ? versionKey : ""}`;
        let entry = records.get(key);
        if (!entry) {
          bounded(records.size);
          const startHour = start + index * width;
          const version = plan.perVersion ? versions.get(versionKey) : undefined;
          const record: StatsRecord = { startHour, endHour: Math.min(startHour + width, end), statusClass, requests: 0, errors: 0, bytes: 0, latency: noLatency };
          if (route !== undefined) record.route = route;
          if (version) Object.assign(record, version);
          records.set(key, (entry = { record, sum: newSum() }));
        }
        addCell(entry.sum, cell, requests, b);
        // Each bucket summed from the same cells (not from the records: merging their Maps costs more).
        const bucket = bucketOf(hour);
        addCell(bucket.sum, cell, requests, b);
        bucket.bucket.classRequests[statusClass]! += requests;
      });
    } else if (versionsMerged && !classes && !bots) {
      // Every request counts: a row an hour, and each class's requests (numbers alone, no histogram to decode).
      for (const cell of stmt.hours.all(app, start, end) as Cell[]) {
        stopIfCancelled();
        addCell(bucketOf(cell[0]).sum, cell, cell[4], undefined);
      }
      for (const [hour, statusClass, requests] of stmt.classRequests.all(app, start, end) as [number, number, number][]) {
        const { bucket, sum } = bucketOf(hour);
        bucket.classRequests[statusClass]! += requests;
        if (statusClass === 5) sum.errors += requests;
      }
    } else {
      // The time series of a filtered call: each cell straight into its bucket.
      eachCell(segmentsOf(start, end, width, false), hourly(false), false, (cell, requests, b) => {
        const { bucket, sum } = bucketOf(cell[0]);
        addCell(sum, cell, requests, b);
        bucket.classRequests[cell[3]]! += requests;
      });
    }
    const ordered = [...records.values()].map(({ record, sum }) => setFigures(record, sum)).sort(recordOrder);

    const routes = new Map<string | null, Sum>();
    if (plan.topN > 0) {
      const level = hourly(true);
      eachCell(segmentsOf(start, end, end - start, level === "routes" && !bots), level, true, (cell, requests, b) => {
        const name = routeNames.get(cell[1]) ?? null;
        let sum = routes.get(name);
        if (!sum) routes.set(name, (sum = newSum()));
        addCell(sum, cell, requests, b);
      });
    }

    /** The summaries of the range: whole days from the days', the hours at its ends from the hours'. */
    const summaries = (kind: number): TopNames[] =>
      segmentsOf(start, end, end - start, true).flatMap((s) => summariesOf(app, kind, s.days ? hoursPerDay : 1, s.from, s.to));
    return {
      records: ordered,
      buckets: [...buckets.values()].map(({ bucket, sum }) => setFigures(bucket, sum)).sort((a, b) => a.startHour - b.startHour),
      startHour: start,
      endHour: end,
      routes: [...routes].map(([name, sum]) => setFigures(name !== null ? { route: name, requests: 0, errors: 0, bytes: 0, latency: noLatency } : { requests: 0, errors: 0, bytes: 0, latency: noLatency }, sum)),
      clientIps: plan.topN > 0 ? topNamesOf(summaries(topNameKind.ip), plan.topN) : [],
      userAgents: plan.topN > 0 ? topNamesOf(summaries(topNameKind.agent), plan.topN, isBot) : [],
    };
  }

  const inSnapshot = db.transaction(answer);
  /** A Stats answer; `cancel` (set to 1 at index 0 by another thread) stops the walk with CANCELLED. */
  return (plan: StatsPlan, cancel?: Int32Array): StatsResult => inSnapshot(plan, cancel);
}

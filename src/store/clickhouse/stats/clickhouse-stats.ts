import { bucketsOf, noFigures, type StatsFigures } from "../../../domain/stats-figures.js";
import { compileRegex } from "../../../query/read-plan.js";
import { checkStatsBuckets, type StatsPlan, statsTooLarge } from "../../../query/stats-plan.js";
import type { StatsClient, StatsRecord, StatsResult, StatsRoute } from "../../store.js";
import { versionsSql } from "../read/plan-sql.js";
import type { SqlClient } from "../sql-client.js";
import { sqlInt, sqlList, sqlString } from "../rows/sql-literal.js";

/** stats_clients' kinds (migration 001). */
const clientKind = { ip: 0, agent: 1 } as const;

interface CellRow {
  b: string;
  route: string;
  c: number;
  m: string;
  v: string;
  bucket: number;
  r: string;
  e: string;
  s: string;
  mx: string;
}

/** Adds a cell (one latency bucket's requests) to some figures. */
function addCell(into: StatsFigures, cell: CellRow): void {
  into.requests += Number(cell.r);
  into.errors += Number(cell.e);
  into.bytes += Number(cell.s);
  into.latency.counts.set(cell.bucket, (into.latency.counts.get(cell.bucket) ?? 0) + Number(cell.r));
  into.latency.max = Math.max(into.latency.max, Number(cell.mx));
}

/** By start hour, route, status class, module and version. */
const recordOrder = (a: StatsRecord, b: StatsRecord) =>
  a.startHour - b.startHour ||
  (a.route! < b.route! ? -1 : a.route! > b.route! ? 1 : 0) ||
  a.statusClass - b.statusClass ||
  ((a.moduleId ?? "") < (b.moduleId ?? "") ? -1 : (a.moduleId ?? "") > (b.moduleId ?? "") ? 1 : 0) ||
  ((a.versionId ?? "") < (b.versionId ?? "") ? -1 : 1);

/**
 * Stats from the rollups alone (stats_hourly and stats_clients, kept by
 * every write): the work is one row per (hour, route, version, status
 * class, user agent, latency bucket) in the range, never a request row. A
 * bot pattern is tested (with the re2 package, as everywhere) on the range's
 * distinct user agents, whose cells are then left out. ClickHouse keeps every
 * route and client name: there is no overflow record.
 */
export function createStatsReader(sql: SqlClient) {
  return async function stats(plan: StatsPlan, signal: AbortSignal): Promise<StatsResult> {
    const app = sqlString(plan.appId);
    const empty: StatsResult = { records: [], buckets: [], startHour: plan.startHour, endHour: plan.endHour, routes: [], clientIps: [], userAgents: [] };
    let start = plan.startHour;
    let end = plan.endHour;
    if (start === undefined || end === undefined) {
      // Every request counted has a client IP: the hours with any are the range.
      const [stored] = await sql.rows<{ first: string; last: string; n: string }>(
        `SELECT min(hour) AS first, max(hour) AS last, count() AS n FROM (
           SELECT hour FROM stats_clients WHERE app = ${app} AND kind = ${clientKind.ip} GROUP BY hour HAVING sum(requests) > 0)`,
        signal,
      );
      if (stored!.n === "0") return empty;
      start ??= Number(stored!.first);
      end ??= Number(stored!.last) + 1;
    }
    if (start >= end) return empty;
    checkStatsBuckets(start, end, plan.resolutionHours, plan.maxRecords);
    const inRange = `app = ${app} AND hour >= ${sqlInt(start)} AND hour < ${sqlInt(end)}`;

    let bots: string[] = [];
    if (plan.excludeUserAgents !== undefined) {
      const re = compileRegex(plan.excludeUserAgents);
      const agents = await sql.rows<{ name: string }>(
        `SELECT DISTINCT name FROM stats_clients WHERE ${inRange} AND kind = ${clientKind.agent}`,
        signal,
      );
      bots = agents.map((a) => a.name).filter((name) => re.test(name));
    }
    const notBots = (column: string) => (bots.length > 0 ? ` AND ${column} NOT IN ${sqlList(bots.map(sqlString))}` : "");

    const where = [inRange];
    if (plan.versions) where.push(versionsSql(plan.versions, "module", "version"));
    if (plan.statusClasses) where.push(`status_class IN ${sqlList(plan.statusClasses.map((c) => sqlInt(c)))}`);
    const width = plan.resolutionHours === 0 ? end - start : plan.resolutionHours;
    /** The cells summed by bucket (or over the range), route (or not), status class and version (or not), per latency bucket. */
    const cellsBy = (bucketed: boolean, byRoute: boolean, byClassAndVersion: boolean) =>
      sql.rows<CellRow>(
        `SELECT ${bucketed ? `intDiv(hour - ${sqlInt(start)}, ${sqlInt(width)})` : "0"} AS b, ${byRoute ? "route" : "''"} AS route,
           ${byClassAndVersion ? "status_class" : "0"} AS c,
           ${byClassAndVersion && plan.perVersion ? "module AS m, version AS v" : "'' AS m, '' AS v"}, bucket,
           sumMerge(requests) AS r, sumMerge(errors) AS e, sumMerge(bytes) AS s, maxMerge(max_latency) AS mx
         FROM stats_hourly WHERE ${where.join(" AND ")}${notBots("agent")}
         GROUP BY b, route, c, m, v, bucket HAVING r != 0`,
        signal,
      );
    const cells = await cellsBy(true, plan.byRoute, true);

    const records = new Map<string, StatsRecord>();
    for (const cell of cells) {
      const key = [cell.b, cell.route, cell.c, cell.m, cell.v].join("\u0000");
      let record = records.get(key);
      if (!record) {
        if (records.size === plan.maxRecords) throw statsTooLarge(plan.maxRecords, `more than ${plan.maxRecords}`);
        const startHour = start + Number(cell.b) * width;
        record = {
          startHour,
          endHour: Math.min(startHour + width, end),
          ...(plan.byRoute ? { route: cell.route } : {}),
          statusClass: cell.c,
          ...(plan.perVersion ? { moduleId: cell.m, versionId: cell.v } : {}),
          ...noFigures(),
        };
        records.set(key, record);
      }
      addCell(record, cell);
    }

    const routes = new Map<string, StatsRoute>();
    for (const cell of plan.topN > 0 ? await cellsBy(false, true, false) : []) {
      let route = routes.get(cell.route);
      if (!route) routes.set(cell.route, (route = { route: cell.route, ...noFigures() }));
      addCell(route, cell);
    }

    /** The `plan.topN` names of a kind with the most requests in the range, most first, then by name. */
    const top = async (kind: number, leaveOut: string): Promise<StatsClient[]> => {
      if (plan.topN === 0) return [];
      const rows = await sql.rows<{ name: string; r: string; e: string }>(
        `SELECT name, sum(requests) AS r, sum(errors) AS e FROM stats_clients
         WHERE ${inRange} AND kind = ${kind}${leaveOut} GROUP BY name HAVING r > 0
         ORDER BY r DESC, name LIMIT ${sqlInt(plan.topN)}`,
        signal,
      );
      return rows
        .map((row) => ({ name: row.name, requests: Number(row.r), errors: Number(row.e), maxError: 0 }))
        .sort((a, b) => b.requests - a.requests || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    };

    const ordered = [...records.values()].sort(recordOrder);
    return {
      records: plan.records ? ordered : [],
      buckets: bucketsOf(ordered),
      startHour: start,
      endHour: end,
      routes: [...routes.values()],
      clientIps: await top(clientKind.ip, ""),
      userAgents: await top(clientKind.agent, notBots("name")),
    };
  };
}

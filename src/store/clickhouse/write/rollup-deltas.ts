import { latencyBucket } from "../../../domain/latency-histogram.js";
import { type StatsFacts, statsFactsOf } from "../../../write/stats-facts.js";
import { hourOf } from "../rows/hours.js";
import type { RequestRow } from "../rows/request-row.js";
import { tsvNumbers, tsvStrings } from "../rows/tab-separated.js";


/** What a version adds to the usage rollups (nothing once expired). */
function usageShareOf(row: RequestRow | undefined) {
  if (!row || row.deleted === 1) return undefined;
  const hour = String(hourOf(BigInt(row.sort_time)));
  return {
    key: `${hour}\u0000${row.version_id}`,
    hour,
    version: row.version_id,
    requests: row.has_record,
    bytes: Number(row.record_bytes) + Number(row.line_bytes),
    lines: Number(row.line_count),
  };
}

/** The Stats facts of versions made or read in this process, each worked out once (its route match is most of the cost). */
const factsOfRows = new WeakMap<RequestRow, StatsFacts>();

/**
 * A version's Stats facts (the writer's observers and the Stats rollup
 * both ask for a finished record's, and a rewrite's earlier version is
 * asked again as it leaves its cell).
 */
export function rowStatsFacts(row: RequestRow): StatsFacts {
  let facts = factsOfRows.get(row);
  if (!facts) {
    facts = statsFactsOf({
      urlMapEntry: row.url_map_entry as string,
      resource: row.resource as string,
      status: row.status as number,
      latency: BigInt(row.latency as string),
      responseSize: BigInt(row.response_size as string),
      ip: row.ip as string,
      userAgent: row.user_agent as string,
    });
    factsOfRows.set(row, facts);
  }
  return facts;
}

/** Where a version counts in Stats: a finished request, by hour of its end, route, status class… (none otherwise). */
function statsCellOf(row: RequestRow | undefined) {
  if (!row || row.deleted === 1 || row.finished !== 1) return undefined;
  const facts = rowStatsFacts(row);
  const hour = String(hourOf(BigInt(row.sort_time)));
  const bucket = latencyBucket(facts.latencyUs);
  const { route, statusClass, userAgent } = facts;
  return {
    facts,
    hour,
    module: row.module_id,
    version: row.version_id,
    bucket,
    key: `${hour}\u0000${route}\u0000${row.module_id}\u0000${row.version_id}\u0000${statusClass}\u0000${userAgent}\u0000${bucket}`,
  };
}

type StatsCell = NonNullable<ReturnType<typeof statsCellOf>>;

/** One key's sums in a group (and, for Stats, the largest latency it adds). */
interface Sums<T> {
  of: T;
  requests: number;
  errors: number;
  bytes: number;
  /** Usage: lines; Stats: the largest latency added. */
  extra: number;
}

function addTo<T>(map: Map<string, Sums<T>>, key: string, of: T, requests: number, errors: number, bytes: number, extra: number, max = false): void {
  let sums = map.get(key);
  if (!sums) map.set(key, (sums = { of, requests: 0, errors: 0, bytes: 0, extra: 0 }));
  sums.requests += requests;
  sums.errors += errors;
  sums.bytes += bytes;
  sums.extra = max ? Math.max(sums.extra, extra) : sums.extra + extra;
}

/** The sums that move something (a key whose changes cancel out is left out). */
const moving = <T>(map: Map<string, Sums<T>>) =>
  [...map.values()].filter((s) => s.requests !== 0 || s.errors !== 0 || s.bytes !== 0 || s.extra !== 0);

/** The rollup columns of request_changes (migration 003), by rollup, in the order `columns` writes them. */
export const rollupColumns = {
  usage: ["usage_hour", "usage_version", "usage_requests", "usage_bytes", "usage_lines"],
  stats: [
    "stats_hour", "stats_route", "stats_module", "stats_version", "stats_class", "stats_agent", "stats_bucket",
    "stats_requests", "stats_errors", "stats_bytes", "stats_max_latency",
  ],
  clients: ["client_hour", "client_kind", "client_name", "client_requests", "client_errors"],
} as const;

export type Rollup = keyof typeof rollupColumns;
export const rollups = Object.keys(rollupColumns) as Rollup[];

/** A rollup's columns when a row carries none of it. */
export const noRollup = (rollup: Rollup): string[] => rollupColumns[rollup].map(() => "[]");

/** stats_clients' kinds (migration 001). */
const ipKind = 0;
const agentKind = 1;

/**
 * What changes move in the rollups (one app's in a group, or one
 * request's: request-writer.ts changesText), summed in Node before the
 * insert: each change takes its old share out and adds its new one, and a
 * group's changes mostly fall in a few (hour, version) keys and Stats
 * cells, so the insert carries one entry per key that moved instead of two
 * per change. The sums equal what the changes would add one by one, so the
 * rollups still equal a recount; and they ride in the same INSERT as the
 * rows they come from, stored with them or not at all.
 */
export function createRollupDeltas(): RollupDeltas {
  const usage = new Map<string, Sums<NonNullable<ReturnType<typeof usageShareOf>>>>();
  const stats = new Map<string, Sums<StatsCell>>();
  const clients = new Map<string, Sums<{ hour: string; kind: number; name: string }>>();

  function moveCell(sign: number, cell: StatsCell): void {
    const { facts, hour } = cell;
    const error = facts.error ? sign : 0;
    // A cell left keeps its largest latency (an upper bound, as Stats reads it).
    addTo(stats, cell.key, cell, sign, error, sign * facts.bytes, sign > 0 ? facts.latencyUs : 0, true);
    addTo(clients, `${hour}\u0000${ipKind}\u0000${facts.ip}`, { hour, kind: ipKind, name: facts.ip }, sign, error, 0, 0);
    addTo(clients, `${hour}\u0000${agentKind}\u0000${facts.userAgent}`, { hour, kind: agentKind, name: facts.userAgent }, sign, error, 0, 0);
  }

  function moveUsage(sign: number, share: ReturnType<typeof usageShareOf>): void {
    if (share) addTo(usage, share.key, share, sign * share.requests, 0, sign * share.bytes, sign * share.lines);
  }

  return {
    /** Adds what a change (`row` replacing `prev`) moves. */
    add(row: RequestRow, prev: RequestRow | undefined): void {
      moveUsage(-1, usageShareOf(prev));
      moveUsage(1, usageShareOf(row));
      const joins = statsCellOf(row);
      const leaves = statsCellOf(prev);
      // A change that leaves the request where it counted (new lines, a late in-progress write) moves nothing.
      if (joins && leaves && joins.key === leaves.key && joins.facts.ip === leaves.facts.ip && joins.facts.error === leaves.facts.error &&
        joins.facts.bytes === leaves.facts.bytes && joins.facts.latencyUs === leaves.facts.latencyUs) return;
      if (leaves) moveCell(-1, leaves);
      if (joins) moveCell(1, joins);
    },

    /** The columns of `rollup` (TabSeparated fields of `rollupColumns`) of the sums that move something. */
    columns(rollup: Rollup): string[] {
      if (rollup === "usage") {
        const u = moving(usage);
        return [
          tsvNumbers(u.map((x) => x.of.hour)), tsvStrings(u.map((x) => x.of.version)),
          tsvNumbers(u.map((x) => x.requests)), tsvNumbers(u.map((x) => x.bytes)), tsvNumbers(u.map((x) => x.extra)),
        ];
      }
      if (rollup === "stats") {
        const s = moving(stats);
        return [
          tsvNumbers(s.map((x) => x.of.hour)), tsvStrings(s.map((x) => x.of.facts.route)), tsvStrings(s.map((x) => x.of.module)),
          tsvStrings(s.map((x) => x.of.version)), tsvNumbers(s.map((x) => x.of.facts.statusClass)), tsvStrings(s.map((x) => x.of.facts.userAgent)),
          tsvNumbers(s.map((x) => x.of.bucket)), tsvNumbers(s.map((x) => x.requests)), tsvNumbers(s.map((x) => x.errors)),
          tsvNumbers(s.map((x) => x.bytes)), tsvNumbers(s.map((x) => x.extra)),
        ];
      }
      const c = moving(clients);
      return [
        tsvNumbers(c.map((x) => x.of.hour)), tsvNumbers(c.map((x) => x.of.kind)), tsvStrings(c.map((x) => x.of.name)),
        tsvNumbers(c.map((x) => x.requests)), tsvNumbers(c.map((x) => x.errors)),
      ];
    },
  };
}

export interface RollupDeltas {
  /** Adds what a change (`row` replacing `prev`) moves. */
  add(row: RequestRow, prev: RequestRow | undefined): void;
  /** The columns of `rollup` (TabSeparated fields of `rollupColumns`) of the sums that move something. */
  columns(rollup: Rollup): string[];
}

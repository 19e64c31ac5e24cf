import { latencyBucket } from "../../../domain/latency-histogram.js";
import { type StatsFacts, statsFactsOf } from "../../../write/stats-facts.js";
import { hourText } from "../rows/hours.js";
import type { RequestRow } from "../rows/request-row.js";
import { tsvNumbers, tsvStrings } from "../rows/tab-separated.js";


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

/** Where a finished version counts in Stats (by hour of its end, route, status class…), and what it adds there. */
function statsCellOf(row: RequestRow, hour: string) {
  const facts = rowStatsFacts(row);
  const bucket = latencyBucket(facts.latencyUs);
  return {
    facts,
    hour,
    row,
    bucket,
    key: `${hour}\u0000${facts.route}\u0000${row.module_id}\u0000${row.version_id}\u0000${facts.statusClass}\u0000${facts.userAgent}\u0000${bucket}`,
  };
}

type StatsCell = ReturnType<typeof statsCellOf>;

/** One key's sums in a group: what the key is (`of`), and what it moves. */
interface Sums<T> {
  of: T;
  requests: number;
  errors: number;
  bytes: number;
  /** Usage: lines; Stats: the largest latency added; clients: 0. */
  extra: number;
}

/** A client's key: its hour, kind and name. */
interface Client {
  hour: string;
  kind: number;
  name: string;
}

/** A new key's sums, at zero (made only when a key first comes up: most changes fall on keys the group has). */
const zero = <T>(of: T): Sums<T> => ({ of, requests: 0, errors: 0, bytes: 0, extra: 0 });

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
  const usage = new Map<string, Sums<{ hour: string; version: string }>>();
  const stats = new Map<string, Sums<StatsCell>>();
  const clients = new Map<string, Sums<Client>>();

  function moveClient(hour: string, kind: number, name: string, requests: number, errors: number): void {
    const key = `${hour}\u0000${kind}\u0000${name}`;
    let sums = clients.get(key);
    if (!sums) clients.set(key, (sums = zero({ hour, kind, name })));
    sums.requests += requests;
    sums.errors += errors;
  }

  function moveCell(sign: number, cell: StatsCell): void {
    const { facts, hour } = cell;
    const error = facts.error ? sign : 0;
    let sums = stats.get(cell.key);
    if (!sums) stats.set(cell.key, (sums = zero(cell)));
    sums.requests += sign;
    sums.errors += error;
    sums.bytes += sign * facts.bytes;
    // A cell left keeps its largest latency (an upper bound, as Stats reads it).
    if (sign > 0 && facts.latencyUs > sums.extra) sums.extra = facts.latencyUs;
    moveClient(hour, ipKind, facts.ip, sign, error);
    moveClient(hour, agentKind, facts.userAgent, sign, error);
  }

  /** What a version (not expired) adds to the usage rollups, `sign` 1, or takes out, -1. */
  function moveUsage(sign: number, row: RequestRow, hour: string): void {
    const key = `${hour}\u0000${row.version_id}`;
    let sums = usage.get(key);
    if (!sums) usage.set(key, (sums = zero({ hour, version: row.version_id })));
    sums.requests += sign * row.has_record;
    sums.bytes += sign * (Number(row.record_bytes) + Number(row.line_bytes));
    sums.extra += sign * Number(row.line_count);
  }

  return {
    /** Adds what a change (`row` replacing `prev`) moves. */
    add(row: RequestRow, prev: RequestRow | undefined): void {
      // An expired version counts nowhere; a version's hour is worked out once for both rollups.
      const prevHour = prev !== undefined && prev.deleted !== 1 ? hourText(prev.sort_time) : undefined;
      const rowHour = row.deleted !== 1 ? hourText(row.sort_time) : undefined;
      if (prevHour !== undefined) moveUsage(-1, prev!, prevHour);
      if (rowHour !== undefined) moveUsage(1, row, rowHour);
      const joins = rowHour !== undefined && row.finished === 1 ? statsCellOf(row, rowHour) : undefined;
      const leaves = prevHour !== undefined && prev!.finished === 1 ? statsCellOf(prev!, prevHour) : undefined;
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
          tsvNumbers(s.map((x) => x.of.hour)), tsvStrings(s.map((x) => x.of.facts.route)), tsvStrings(s.map((x) => x.of.row.module_id)),
          tsvStrings(s.map((x) => x.of.row.version_id)), tsvNumbers(s.map((x) => x.of.facts.statusClass)), tsvStrings(s.map((x) => x.of.facts.userAgent)),
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

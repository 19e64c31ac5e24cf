import { latencyBucket } from "../../../domain/latency-histogram.js";
import { type StatsFacts, statsFactsOf } from "../../../write/stats-facts.js";
import { hourText } from "../rows/hours.js";
import type { RequestRow } from "../rows/request-row.js";
import { tsvStrings } from "../rows/tab-separated.js";


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

/** The parts of a Stats cell's key, filled again for every key (no array a key). */
const statsKeyParts: (string | number)[] = ["", "", "", "", 0, "", 0];

/**
 * The key of a finished version's Stats cell (by hour of its end, route,
 * module, version, status class, agent, bucket): one join, a flat string
 * at once, where a template of its 13 pieces made a tree of ~10 strings,
 * copied flat again at its first lookup.
 */
function statsKey(row: RequestRow, hour: string, facts: StatsFacts, bucket: number): string {
  const p = statsKeyParts;
  p[0] = hour; p[1] = facts.route; p[2] = row.module_id; p[3] = row.version_id; p[4] = facts.statusClass; p[5] = facts.userAgent; p[6] = bucket;
  return p.join("\u0000");
}

/** One (hour, version)'s Usage sums in a group. */
interface UsageSums {
  hour: string;
  version: string;
  requests: number;
  bytes: number;
  lines: number;
}

/** One Stats cell's sums in a group: the cell, and what it moves. */
interface StatsSums {
  hour: string;
  route: string;
  module: string;
  version: string;
  statusClass: number;
  agent: string;
  bucket: number;
  requests: number;
  errors: number;
  bytes: number;
  /** The largest latency added (a cell left keeps its largest, an upper bound, as Stats reads it). */
  maxLatency: number;
}

/** One client's sums in a group: its hour, kind and name, and what it moves. */
interface ClientSums {
  hour: string;
  kind: number;
  name: string;
  requests: number;
  errors: number;
}

/**
 * Array columns filled in one pass over a rollup's sums (those that move
 * something), each joined once: where a filter and a map a column made an
 * array a column and a string an element.
 */
function arrayColumns(count: number): (string | number)[][] {
  const columns: (string | number)[][] = [];
  for (let i = 0; i < count; i++) columns.push([]);
  return columns;
}
const numbers = (values: readonly (string | number)[]) => `[${values.join(",")}]`;
/** (A column of strings: only strings were put in it.) */
const strings = (values: readonly (string | number)[]) => tsvStrings(values as readonly string[]);

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
const ipKind = 0 as const;
const agentKind = 1 as const;

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
  /**
   * Usage sums by hour, then version; clients' by hour, then kind, then
   * name: found by the strings a row and its facts hold, no key made a
   * change (the joined keys were ~400 bytes of garbage a record). `usage`
   * and `clients` hold the sums in the order they first came up, as a Map
   * of joined keys kept them (the INSERT's text is the same).
   */
  const usageByHour = new Map<string, Map<string, UsageSums>>();
  const usage: UsageSums[] = [];
  const stats = new Map<string, StatsSums>();
  const clientsByHour = new Map<string, [ip: Map<string, ClientSums>, agent: Map<string, ClientSums>]>();
  const clients: ClientSums[] = [];

  function moveClient(hour: string, kind: typeof ipKind | typeof agentKind, name: string, requests: number, errors: number): void {
    let byKind = clientsByHour.get(hour);
    if (!byKind) clientsByHour.set(hour, (byKind = [new Map(), new Map()]));
    const byName = byKind[kind];
    let sums = byName.get(name);
    if (!sums) {
      byName.set(name, (sums = { hour, kind, name, requests: 0, errors: 0 }));
      clients.push(sums);
    }
    sums.requests += requests;
    sums.errors += errors;
  }

  function moveCell(sign: number, row: RequestRow, hour: string, facts: StatsFacts, bucket: number, key: string): void {
    const error = facts.error ? sign : 0;
    let sums = stats.get(key);
    if (!sums) {
      // Made only when a cell first comes up (most changes fall on cells the group has).
      sums = {
        hour, route: facts.route, module: row.module_id, version: row.version_id, statusClass: facts.statusClass,
        agent: facts.userAgent, bucket, requests: 0, errors: 0, bytes: 0, maxLatency: 0,
      };
      stats.set(key, sums);
    }
    sums.requests += sign;
    sums.errors += error;
    sums.bytes += sign * facts.bytes;
    if (sign > 0 && facts.latencyUs > sums.maxLatency) sums.maxLatency = facts.latencyUs;
    moveClient(hour, ipKind, facts.ip, sign, error);
    moveClient(hour, agentKind, facts.userAgent, sign, error);
  }

  /** What a version (not expired) adds to the usage rollups, `sign` 1, or takes out, -1. */
  function moveUsage(sign: number, row: RequestRow, hour: string): void {
    let byVersion = usageByHour.get(hour);
    if (!byVersion) usageByHour.set(hour, (byVersion = new Map()));
    let sums = byVersion.get(row.version_id);
    if (!sums) {
      byVersion.set(row.version_id, (sums = { hour, version: row.version_id, requests: 0, bytes: 0, lines: 0 }));
      usage.push(sums);
    }
    sums.requests += sign * row.has_record;
    sums.bytes += sign * (Number(row.record_bytes) + Number(row.line_bytes));
    sums.lines += sign * Number(row.line_count);
  }

  return {
    /** Adds what a change (`row` replacing `prev`) moves. */
    add(row: RequestRow, prev: RequestRow | undefined): void {
      // An expired version counts nowhere; a version's hour is worked out once for both rollups.
      const prevHour = prev !== undefined && prev.deleted !== 1 ? hourText(prev.sort_time) : undefined;
      const rowHour = row.deleted !== 1 ? hourText(row.sort_time) : undefined;
      if (prevHour !== undefined) moveUsage(-1, prev!, prevHour);
      if (rowHour !== undefined) moveUsage(1, row, rowHour);
      const joins = rowHour !== undefined && row.finished === 1;
      const leaves = prevHour !== undefined && prev!.finished === 1;
      if (!joins && !leaves) return;
      const joinFacts = joins ? rowStatsFacts(row) : undefined;
      const joinBucket = joinFacts ? latencyBucket(joinFacts.latencyUs) : 0;
      const joinKey = joinFacts ? statsKey(row, rowHour!, joinFacts, joinBucket) : "";
      const leaveFacts = leaves ? rowStatsFacts(prev!) : undefined;
      const leaveBucket = leaveFacts ? latencyBucket(leaveFacts.latencyUs) : 0;
      const leaveKey = leaveFacts ? statsKey(prev!, prevHour!, leaveFacts, leaveBucket) : "";
      // A change that leaves the request where it counted (new lines, a late in-progress write) moves nothing.
      if (joinFacts && leaveFacts && joinKey === leaveKey && joinFacts.ip === leaveFacts.ip && joinFacts.error === leaveFacts.error &&
        joinFacts.bytes === leaveFacts.bytes && joinFacts.latencyUs === leaveFacts.latencyUs) return;
      if (leaveFacts) moveCell(-1, prev!, prevHour!, leaveFacts, leaveBucket, leaveKey);
      if (joinFacts) moveCell(1, row, rowHour!, joinFacts, joinBucket, joinKey);
    },

    /** The columns of `rollup` (TabSeparated fields of `rollupColumns`) of the sums that move something. */
    columns(rollup: Rollup): string[] {
      if (rollup === "usage") {
        const [hour, version, requests, bytes, lines] = arrayColumns(5);
        for (const x of usage) {
          if (x.requests === 0 && x.bytes === 0 && x.lines === 0) continue;
          hour!.push(x.hour); version!.push(x.version); requests!.push(x.requests); bytes!.push(x.bytes); lines!.push(x.lines);
        }
        return [numbers(hour!), strings(version!), numbers(requests!), numbers(bytes!), numbers(lines!)];
      }
      if (rollup === "stats") {
        const [hour, route, module, version, statusClass, agent, bucket, requests, errors, bytes, maxLatency] = arrayColumns(11);
        for (const x of stats.values()) {
          if (x.requests === 0 && x.errors === 0 && x.bytes === 0 && x.maxLatency === 0) continue;
          hour!.push(x.hour); route!.push(x.route); module!.push(x.module); version!.push(x.version);
          statusClass!.push(x.statusClass); agent!.push(x.agent); bucket!.push(x.bucket);
          requests!.push(x.requests); errors!.push(x.errors); bytes!.push(x.bytes); maxLatency!.push(x.maxLatency);
        }
        return [
          numbers(hour!), strings(route!), strings(module!), strings(version!), numbers(statusClass!), strings(agent!),
          numbers(bucket!), numbers(requests!), numbers(errors!), numbers(bytes!), numbers(maxLatency!),
        ];
      }
      const [hour, kind, name, requests, errors] = arrayColumns(5);
      for (const x of clients) {
        if (x.requests === 0 && x.errors === 0) continue;
        hour!.push(x.hour); kind!.push(x.kind); name!.push(x.name); requests!.push(x.requests); errors!.push(x.errors);
      }
      return [numbers(hour!), numbers(kind!), strings(name!), numbers(requests!), numbers(errors!)];
    },
  };
}

export interface RollupDeltas {
  /** Adds what a change (`row` replacing `prev`) moves. */
  add(row: RequestRow, prev: RequestRow | undefined): void;
  /** The columns of `rollup` (TabSeparated fields of `rollupColumns`) of the sums that move something. */
  columns(rollup: Rollup): string[];
}

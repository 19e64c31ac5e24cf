import { ipInRanges, ipv4Bounds } from "../../../domain/ip-range.js";
import type { DeletePlan } from "../../../query/delete-plan.js";
import { clickhouseRegex } from "../read/clickhouse-regex.js";
import { combinedSql, type RequestRow, requestsRead, rkeyInMutation } from "../rows/request-row.js";
import { bytesToText, sqlInt, sqlList, sqlString } from "../rows/sql-literal.js";
import { tombstoneColumns } from "../retention.js";
import type { SqlClient } from "../sql-client.js";
import { guarded } from "../storage-error.js";
import type { TableLayout } from "../table-layout.js";
import type { GroupCommit, GroupWork } from "./group-commit.js";
import { mutationsDone } from "./mutations-done.js";
import { createSearchEraser } from "./search-eraser.js";
import type { WriteBatcher } from "./write-batcher.js";

/** Requests one step finds and expires (one INSERT of tombstones). */
const step = 5_000;
/** Keys one mutation names, at most (its SQL text stays small). */
const perMutation = 2_000;

export interface RequestEraserParts {
  sql: SqlClient;
  layout: TableLayout;
  batcher: WriteBatcher<GroupWork>;
  commit: GroupCommit;
}

export type EraseRequests = (plan: DeletePlan, signal: AbortSignal, onDeleted?: (count: number) => void) => Promise<number>;

/** The plan's filters as a WHERE clause over `requests` (the IP ranges only roughly: rows are checked again in JS). */
function whereOf(plan: DeletePlan): string {
  const where = [`app = ${sqlString(plan.appId)}`, "deleted = 0"];
  if (plan.requestIds) where.push(`request_id IN ${sqlList(plan.requestIds.map((id) => sqlString(bytesToText(id))))}`);
  if (plan.startTime !== undefined) where.push(`sort_time >= ${sqlInt(plan.startTime)}`);
  if (plan.endTime !== undefined) where.push(`sort_time < ${sqlInt(plan.endTime)}`);
  if (plan.ips) {
    const v4 = plan.ips.filter((r) => r.family === 4).map(ipv4Bounds);
    const ip = "ip";
    const dotted = `match(${ip}, '^[0-9]+[.][0-9]+[.][0-9]+[.][0-9]+$')`;
    where.push(`(position(${ip}, ':') > 0${v4.map(([lo, hi]) => ` OR (${dotted} AND IPv4StringToNum(${ip}) BETWEEN ${lo} AND ${hi})`).join("")})`);
  }
  if (plan.combinedRegex !== undefined) {
    where.push(`match(${combinedSql}, ${sqlString(clickhouseRegex(plan.combinedRegex, "combined_log_regex"))})`);
  }
  return where.join(" AND ");
}

/**
 * Delete on ClickHouse. Each step finds the next requests of the plan (by
 * sort time and id) and expires them as retention does, alone in the write
 * order: a tombstone version of each, its rollup shares taken out in the
 * same INSERT, so they leave Read, Tail, Usage and Stats at once. Then
 * mutations delete every version of them, their lines and positions, their
 * search index postings and terms no other request has (search-eraser.ts), and
 * the Stats rows of client IPs and user agents that no request counts any
 * more: ClickHouse rewrites the parts that hold them in the background, and
 * the old parts leave the disk once they are unused and `old_parts_lifetime`
 * (8 minutes by default) has passed (docs/privacy.md).
 */
export function createRequestEraser({ sql, layout, batcher, commit }: RequestEraserParts): EraseRequests {
  const eraseFromSearch = createSearchEraser(sql, layout);
  /** The next step's requests after `after` (sort time, id), the IP ranges checked exactly. */
  async function next(plan: DeletePlan, after: [string, string] | undefined, signal: AbortSignal) {
    const from = after ? ` AND (sort_time > ${sqlInt(BigInt(after[0]))} OR (sort_time = ${sqlInt(BigInt(after[0]))} AND request_id > ${sqlString(after[1])}))` : "";
    const rows = await sql.rows<RequestRow>(
      `SELECT ${tombstoneColumns} FROM ${requestsRead(`FINAL WHERE ${whereOf(plan)}${from} ORDER BY sort_time, request_id LIMIT ${step}`)}
       ORDER BY sort_time, request_id`,
      signal,
    );
    const last = rows.at(-1);
    return {
      rows: plan.ips ? rows.filter((r) => ipInRanges(String(r.ip), plan.ips!)) : rows,
      after: last ? ([String(last.sort_time), String(last.request_id)] as [string, string]) : undefined,
      more: rows.length === step,
    };
  }

  /** Deletes rows whose every key is in `keys` (in mutations of at most perMutation keys). */
  async function mutate(table: string, condition: (list: string) => string, keys: readonly string[], signal: AbortSignal) {
    for (let at = 0; at < keys.length; at += perMutation) {
      await sql.command(layout.alter(table, `DELETE WHERE ${condition(sqlList(keys.slice(at, at + perMutation)))}`), signal);
    }
  }

  /**
   * The Stats rows of names (kind 0 client IPs, 1 user agents) whose counts
   * now sum to zero in every hour: they count no request, and their text
   * goes. (A name that other requests still count stays.) The mutations name
   * them by cityHash64, never by text: ClickHouse keeps a mutation's command
   * (mutation_N.txt, or ZooKeeper on a cluster) after it is done, and the
   * names are the deleted requests' own. (Another name of the app with the
   * same 64-bit hash, whose rows would go too, is not a practical concern.)
   */
  async function dropUncounted(app: string, ips: Set<string>, agents: Set<string>, signal: AbortSignal) {
    const app_ = sqlString(app);
    for (const [kind, names] of [[0, ips], [1, agents]] as const) {
      const list = [...names].filter((n) => n !== "");
      for (let at = 0; at < list.length; at += perMutation) {
        const chunk = list.slice(at, at + perMutation).map(sqlString);
        const uncounted = await sql.rows<{ h: string }>(
          `SELECT toString(cityHash64(name)) AS h FROM (
             SELECT name, hour, (sum(requests) != 0 OR sum(errors) != 0) AS counted FROM stats_clients
             WHERE app = ${app_} AND kind = ${kind} AND name IN ${sqlList(chunk)} GROUP BY name, hour)
           GROUP BY name HAVING max(counted) = 0`,
          signal,
        );
        await mutate("stats_clients", (l) => `app = ${app_} AND kind = ${kind} AND cityHash64(name) IN ${l}`, uncounted.map((r) => r.h), signal);
      }
    }
    const agentList = [...agents].filter((n) => n !== "").map(sqlString);
    for (let at = 0; at < agentList.length; at += perMutation) {
      const chunk = agentList.slice(at, at + perMutation);
      const uncounted = await sql.rows<{ h: string }>(
        `SELECT toString(cityHash64(agent)) AS h FROM stats_hourly WHERE app = ${app_} AND agent IN ${sqlList(chunk)}
         GROUP BY agent HAVING sumMerge(requests) = 0`,
        signal,
      );
      await mutate("stats_hourly", (l) => `app = ${app_} AND cityHash64(agent) IN ${l}`, uncounted.map((r) => r.h), signal);
    }
  }

  return (plan, signal, onDeleted) =>
    guarded(signal, async () => {
      let total = 0;
      const rkeys: string[] = [];
      const ips = new Set<string>();
      const agents = new Set<string>();
      let after: [string, string] | undefined;
      for (let more = true; more; ) {
        // Found and expired alone in the write order: no group changes them in between.
        const found = await batcher.alone(async () => {
          const batch = await next(plan, after, signal);
          if (!plan.dryRun && batch.rows.length > 0) await commit.expire(batch.rows);
          return batch;
        }, signal);
        total += found.rows.length;
        if (!plan.dryRun && found.rows.length > 0) {
          onDeleted?.(found.rows.length);
          for (const row of found.rows) {
            rkeys.push(sqlInt(BigInt(row.rkey)));
            ips.add(String(row.ip));
            agents.add(String(row.user_agent));
          }
        }
        after = found.after;
        more = found.more;
      }
      if (plan.dryRun || total === 0) return total;
      // rkey (the seq of the write that made a request) names one incarnation: a request written
      // again under the same id since is another, and stays.
      const app = sqlString(plan.appId);
      // (Read from the requests' rows: before they go.)
      await eraseFromSearch(plan.appId, rkeys, signal);
      for (const table of ["requests", "lines", "positions"]) {
        await mutate(table, (l) => `app = ${app} AND ${table === "requests" ? rkeyInMutation(l) : `rkey IN ${l}`}`, rkeys, signal);
      }
      await dropUncounted(plan.appId, ips, agents, signal);
      // ALTER … DELETE only queues a mutation: wait until every shard has
      // applied them, so the erased requests are gone when Delete returns.
      await mutationsDone(sql, layout, signal);
      return total;
    });
}

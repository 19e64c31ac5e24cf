import { createdDay } from "../migrations/001-init.js";
import { requestsRead, selectRequests } from "../rows/request-row.js";
import type { SqlClient } from "../sql-client.js";
import type { VersionSource } from "./query-sql.js";

interface PartRow {
  partition: string;
  name: string;
  level: number;
}

/** The active parts of `requests` now: their names (to tell whether they changed) and the partitions merged whole. */
async function partsOf(sql: SqlClient, signal: AbortSignal) {
  const parts = await sql.rows<PartRow>(
    "SELECT partition, name, level FROM system.parts WHERE active AND database = currentDatabase() AND table = 'requests' ORDER BY name",
    signal,
  );
  const byPartition = new Map<string, PartRow[]>();
  for (const p of parts) byPartition.set(p.partition, [...(byPartition.get(p.partition) ?? []), p]);
  const merged: string[] = [];
  const unmerged: string[] = [];
  for (const [partition, list] of byPartition) {
    // One part made by a merge holds one version of each request (ReplacingMergeTree keeps the latest when it
    // merges); a part as an insert wrote it, or several parts, may hold more.
    if (list.length === 1 && list[0]!.level > 0) merged.push(partition);
    else unmerged.push(partition);
  }
  return { names: parts.map((p) => p.name).join(","), merged, unmerged };
}

const final: VersionSource = (conditions) => requestsRead(`FINAL WHERE ${conditions}`);

/**
 * Runs `query` over each request's latest version without FINAL where it can:
 * FINAL merges every part's rows as it reads them (five times a plain read of
 * a day of requests, measured on 18.16), but a partition whose one part was
 * made by a merge already holds one version of each request. Partitions
 * merged whole are read as they are, the others with FINAL. The parts are
 * read before and after: if they changed meanwhile (an insert, a merge), the
 * query may have seen another set than the one it was written for, and it
 * runs again with FINAL throughout. On a cluster (parts on every shard) it
 * always reads with FINAL.
 */
export async function withVersionSource<T>(
  sql: SqlClient,
  onCluster: boolean,
  signal: AbortSignal,
  query: (source: VersionSource) => Promise<T>,
): Promise<T> {
  if (onCluster) return query(final);
  const before = await partsOf(sql, signal);
  if (before.merged.length === 0) return query(final);
  const source: VersionSource =
    before.unmerged.length === 0
      ? (conditions) => requestsRead(`WHERE ${conditions}`)
      : (conditions) =>
          `(${selectRequests(`WHERE ${createdDay} IN (${before.merged.join(", ")}) AND ${conditions}`)}
            UNION ALL ${selectRequests(`FINAL WHERE ${createdDay} IN (${before.unmerged.join(", ")}) AND ${conditions}`)})`;
  const answer = await query(source);
  const after = await partsOf(sql, signal);
  return after.names === before.names ? answer : query(final);
}

import { lastHour, type UsagePlan, usageTooLarge } from "../../../query/usage-plan.js";
import type { UsageBucket, UsageResult } from "../../store.js";
import type { SqlClient } from "../sql-client.js";
import { sqlInt, sqlList, sqlString } from "../rows/sql-literal.js";

/**
 * Usage from the hourly rollups alone (usage_hourly, kept by every write):
 * the work is one row per (hour, version) in the range, whatever the number
 * of stored requests. Rows not merged yet are summed by GROUP BY; an (hour,
 * version) whose sums are zero holds nothing. The buckets are made in SQL.
 */
export function createUsageReader(sql: SqlClient) {
  return async function usage(plan: UsagePlan, signal: AbortSignal): Promise<UsageResult> {
    const versions = plan.versions ? ` AND version_id IN ${sqlList(plan.versions.map(sqlString))}` : "";
    /** The (hour, version) sums that hold something, within `range`. */
    const hours = (range: string) => `
      SELECT hour, version_id, sum(requests) AS hr, sum(bytes) AS hb, sum(lines) AS hl FROM usage_hourly
      WHERE app = ${sqlString(plan.appId)}${versions}${range}
      GROUP BY hour, version_id HAVING hr != 0 OR hl != 0`;

    let start = plan.startHour;
    let end = plan.endHour;
    if (start === undefined || end === undefined) {
      const [stored] = await sql.rows<{ first: string; last: string; n: string }>(
        `SELECT min(hour) AS first, max(hour) AS last, count() AS n FROM (${hours("")})`,
        signal,
      );
      if (stored!.n === "0") return { buckets: [], versions: [] };
      start ??= Number(stored!.first);
      end ??= Math.min(Number(stored!.last) + 1, lastHour);
    }
    if (start >= end) return { buckets: [], versions: [] };
    const inRange = hours(` AND hour >= ${sqlInt(start)} AND hour < ${sqlInt(end)}`);
    const seen = await sql.rows<{ version_id: string }>(`SELECT DISTINCT version_id FROM (${inRange})`, signal);
    const versionIds = seen.map((v) => v.version_id).sort();
    if (plan.versionsOnly) return { buckets: [], versions: versionIds };

    const width = plan.resolutionHours === 0 ? end - start : plan.resolutionHours;
    const rows = await sql.rows<{ bucket: string; v: string; r: string; b: string; l: string }>(
      `SELECT intDiv(hour - ${sqlInt(start)}, ${sqlInt(width)}) AS bucket,
         ${plan.combineVersions ? "''" : "version_id"} AS v, sum(hr) AS r, sum(hb) AS b, sum(hl) AS l
       FROM (${inRange}) GROUP BY bucket, v ORDER BY bucket LIMIT ${sqlInt(plan.maxRecords + 1)}`,
      signal,
    );
    // Bounded: an open range over years of many versions stops at the limit.
    if (rows.length > plan.maxRecords) throw usageTooLarge(plan.maxRecords, `more than ${plan.maxRecords}`);
    const buckets = rows.map((row): UsageBucket => {
      const startHour = start + Number(row.bucket) * width;
      return {
        startHour,
        endHour: Math.min(startHour + width, end),
        versionId: plan.combineVersions ? undefined : row.v,
        requests: Number(row.r),
        bytes: Number(row.b),
        lines: Number(row.l),
      };
    });
    buckets.sort((a, b) => a.startHour - b.startHour || ((a.versionId ?? "") < (b.versionId ?? "") ? -1 : 1));
    return { buckets, versions: versionIds };
  };
}

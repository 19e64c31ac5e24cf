import type Database from "better-sqlite3";
import { lastHour, type UsagePlan, usageTooLarge } from "../../../query/usage-plan.js";
import type { UsageBucket, UsageResult } from "../../store.js";
import { createAppLookup } from "../rows/keys.js";

/**
 * Usage from the hourly rollups alone: the work is one row per (hour,
 * version) in the range, whatever the number of stored requests.
 */
export function createUsageReader(db: Database.Database) {
  const appKey = createAppLookup(db);
  const range = db.prepare("SELECT min(hour) AS first, max(hour) AS last FROM usage_hourly WHERE app_key = ?");
  const hours = (filtered: boolean) =>
    db.prepare(`
      SELECT u.hour, v.version_id, sum(u.requests) AS requests, sum(u.bytes) AS bytes, sum(u.lines) AS lines
      FROM usage_hourly u JOIN versions v ON v.id = u.version_key
      WHERE u.app_key = @app AND u.hour >= @start AND u.hour < @end
        ${filtered ? "AND v.version_id IN (SELECT value FROM json_each(@versions))" : ""}
      GROUP BY u.hour, v.version_id`);
  const all = hours(false);
  const someVersions = hours(true);

  return function usage(plan: UsagePlan): UsageResult {
    const app = appKey(plan.appId);
    if (app === undefined) return { buckets: [], versions: [] };
    const stored = range.get(app) as { first: number | null; last: number | null };
    const start = plan.startHour ?? stored.first;
    const end = plan.endHour ?? (stored.last === null ? null : Math.min(stored.last + 1, lastHour));
    if (start === null || end === null || start >= end) return { buckets: [], versions: [] };

    const params = { app, start, end, versions: JSON.stringify(plan.versions ?? []) };
    const rows = (plan.versions ? someVersions : all).iterate(params) as IterableIterator<{
      hour: number;
      version_id: string;
      requests: number;
      bytes: number;
      lines: number;
    }>;
    const width = plan.resolutionHours === 0 ? end - start : plan.resolutionHours;
    const buckets = new Map<string, UsageBucket>();
    const versions = new Set<string>();
    for (const row of rows) {
      if (row.requests === 0 && row.lines === 0) continue;
      versions.add(row.version_id);
      if (plan.versionsOnly) continue;
      const index = Math.floor((row.hour - start) / width);
      const versionId = plan.combineVersions ? undefined : row.version_id;
      const key = `${index}\u0000${versionId ?? ""}`;
      let bucket = buckets.get(key);
      if (!bucket) {
        // Bounded: an open range over years of many versions stops here, not at the end.
        if (buckets.size === plan.maxRecords) throw usageTooLarge(plan.maxRecords, `more than ${plan.maxRecords}`);
        const startHour = start + index * width;
        bucket = { startHour, endHour: Math.min(startHour + width, end), versionId, requests: 0, bytes: 0, lines: 0 };
        buckets.set(key, bucket);
      }
      bucket.requests += row.requests;
      bucket.bytes += row.bytes;
      bucket.lines += row.lines;
    }
    const ordered = [...buckets.values()].sort(
      (a, b) => a.startHour - b.startHour || ((a.versionId ?? "") < (b.versionId ?? "") ? -1 : 1),
    );
    return { buckets: ordered, versions: [...versions].sort() };
  };
}

import { formatCombined } from "../../../format/combined-line.js";
import { ipFromSql, resourceSql } from "../rows/stored-record.js";

const text = (column: string) => `(SELECT text FROM strings WHERE id = r.${column})`;

/**
 * The arguments of reqlog_combined_match (scan-budget.ts) for a row of
 * `requests r`: the stored line, or the fields a derived one is made of,
 * in combinedLineOf's order.
 */
export const combinedMatchArgsSql = [
  "r.combined", "r.ip", "r.nickname", "r.start_time", "r.end_time", "r.latency", "r.sort_time", text("method"),
  resourceSql, text("http_version"), "r.status", "r.response_size", text("referrer"), text("user_agent"),
].join(", ");

/**
 * A row's combined line from combinedMatchArgsSql's values (read with
 * safeIntegers): the stored one, or the one formatCombined derives, built in
 * JS: cheaper than building it in SQL (measured in docs/benchmarks.md).
 */
export function combinedLineOf(args: unknown[]): string {
  const [combined, ip, nickname, start, end, latency, sortTime, method, resource, httpVersion, status, size, referrer, userAgent] =
    args as [string | null, unknown, string | null, bigint | null, bigint | null, bigint, bigint, string | null, string, string | null, bigint, bigint, string | null, string | null];
  if (combined !== null) return combined;
  const endTime = end ?? sortTime;
  return formatCombined({
    ip: ipFromSql(ip),
    nickname: nickname ?? "",
    startTime: start ?? endTime - latency,
    endTime,
    method: method ?? "",
    resource,
    httpVersion: httpVersion ?? "",
    status: Number(status),
    responseSize: size,
    referrer: referrer ?? "",
    userAgent: userAgent ?? "",
  });
}

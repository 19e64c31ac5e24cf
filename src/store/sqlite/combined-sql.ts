import type { CombinedFields } from "../../format/combined-line.js";

/**
 * The combined line (format/combined-line.ts) as an SQL expression over a
 * `requests` row aliased `r`, so that Read can match RE2 patterns against
 * stored and derived lines alike without building messages in JS. It equals
 * formatCombined() for every row whose `combined` the store leaves NULL,
 * which it does only when `sqlDerivable` holds: then no field needs escaping
 * and the expression is plain concatenation (escaping in SQL would cost a
 * dozen replace() calls a row, more than the rest of the scan).
 */
const orDash = (sql: string) => `CASE WHEN coalesce(${sql}, '') = '' THEN '-' ELSE ${sql} END`;
// One strftime a row: "dd mm yyyy:HH:MM:SS", cut up below.
const stamp =
  "strftime('%d %m %Y:%H:%M:%S', (CASE WHEN r.end_time > 0 THEN r.end_time ELSE r.start_time END) / 1000000, 'unixepoch')";
const month = (t: string) => `substr('JanFebMarAprMayJunJulAugSepOctNovDec', 3 * substr(${t}, 4, 2) - 2, 3)`;

export const derivedCombinedSql =
  `${orDash("r.ip")} || ' - ' || ${orDash("r.nickname")} || ' [' || ` +
  `(SELECT substr(t, 1, 2) || '/' || ${month("t")} || '/' || substr(t, 7) FROM (SELECT ${stamp} AS t)) || ` +
  `' +0000] "' || r.method || ' ' || r.resource || ` +
  `CASE WHEN r.http_version = '' THEN '' ELSE ' ' || r.http_version END || ` +
  `'" ' || r.status || ' ' || r.response_size || ' "' || ${orDash("r.referrer")} || '" "' || ${orDash("r.user_agent")} || '"'`;

/** The combined line of a row, stored or derived. */
export const combinedSql = `coalesce(r.combined, ${derivedCombinedSql})`;

// The characters formatCombined escapes.
const needsEscape = /["\\\x00-\x1f\x7f]/;
const year1970 = 0n;
const year10000 = 253_402_300_800_000_000n; // 10000-01-01T00:00:00Z in µs

/** Whether derivedCombinedSql reproduces formatCombined for these fields. */
export function sqlDerivable(log: CombinedFields): boolean {
  const time = log.endTime > 0n ? log.endTime : log.startTime;
  if (time < year1970 || time >= year10000) return false;
  return ![log.ip, log.nickname, log.method, log.resource, log.httpVersion, log.referrer, log.userAgent].some(
    (field) => field !== undefined && needsEscape.test(field),
  );
}

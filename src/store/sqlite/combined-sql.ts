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

// The fields a derived line is made of, most likely holder of a literal first;
// the numbers print as digits (and a sign), so only such a piece can be in them.
const textFields = ["r.resource", "r.user_agent", "r.referrer", "r.ip", "r.nickname", "r.method", "r.http_version"];
const numberFields = ["r.status", "r.response_size"];
const monthNames = "JanFebMarAprMayJunJulAugSepOctNovDec";

/**
 * Whether `token` (free of spaces, quotes and brackets) may occur inside the
 * time of a derived line (`dd/Mon/yyyy:HH:MM:SS`), or inside its fixed parts.
 */
function mayBeOutsideFields(token: string): boolean {
  if ("-".includes(token) || "+0000".includes(token)) return true;
  if (/[^0-9A-Za-z/:]/.test(token)) return false;
  const letters = token.match(/[A-Za-z]+/g) ?? [];
  const digits = token.match(/[0-9]+/g) ?? [];
  return letters.every((l) => l.length <= 3 && monthNames.includes(l)) && digits.every((d) => d.length <= 4);
}

const sqlText = (s: string) => `'${s.replaceAll("'", "''")}'`;

/**
 * A cheap SQL test every row whose combined line contains all of `literals`
 * passes (undefined when there is none to make): stored lines are searched
 * whole; a derived line joins its fields with spaces, quotes and brackets,
 * none of which occur in a derived row's fields' rendering boundaries, so a
 * piece of a literal without those characters lies inside one field (or the
 * time, or a fixed part — such pieces are not used). Rows it lets through
 * still meet RE2; it only spares deriving the line for rows that cannot match.
 */
export function combinedPrefilterSql(literals: readonly string[]): string | undefined {
  const tokens = [...new Set(literals.flatMap((l) => l.split(/[ "[\]]+/)))]
    .filter((t) => t.length >= 3 && !mayBeOutsideFields(t))
    .sort((a, b) => b.length - a.length)
    .slice(0, 3);
  if (tokens.length === 0) return undefined;
  // Plain AND / OR (not CASE), so SQLite stops at the first test that settles a row.
  const stored = literals.map((l) => `(r.combined IS NULL OR instr(r.combined, ${sqlText(l)}))`);
  const derived = tokens.map((t) => {
    const fields = /^[-0-9]+$/.test(t) ? [...textFields, ...numberFields] : textFields;
    return `(r.combined IS NOT NULL OR ${fields.map((f) => `instr(${f}, ${sqlText(t)})`).join(" OR ")})`;
  });
  return [...derived, ...stored].join(" AND ");
}

/**
 * LogsQL's value syntax: numbers with `_` separators and short suffixes
 * (`1.5K`, `1MB`, `64KiB`), durations (`1.5s`, `1h30m`, `250µs`) and times
 * (`2026-11-20`, `2026-11-20T10:00Z`, `2026-11-20T10:00:00+02:00`, Unix
 * seconds, `now`). reqlog counts time in microseconds, so durations and
 * times come out in µs.
 */

const shortSuffixes: Record<string, number> = {
  K: 1e3, KB: 1e3, M: 1e6, MB: 1e6, G: 1e9, GB: 1e9, T: 1e12, TB: 1e12,
  Ki: 2 ** 10, KiB: 2 ** 10, Mi: 2 ** 20, MiB: 2 ** 20, Gi: 2 ** 30, GiB: 2 ** 30, Ti: 2 ** 40, TiB: 2 ** 40,
};

const plainNumber = /^[+-]?(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d+)?$/;

/** A LogsQL number (`12345`, `-1.5`, `1_000`, `1.5K`, `64KiB`, `inf`), or undefined. */
export function parseNumber(text: string): number | undefined {
  if (/^[+-]?inf$/i.test(text)) return text.startsWith("-") ? -Infinity : Infinity;
  const suffix = /(KiB|MiB|GiB|TiB|Ki|Mi|Gi|Ti|KB|MB|GB|TB|K|M|G|T)$/.exec(text)?.[1];
  const digits = suffix ? text.slice(0, -suffix.length) : text;
  if (!plainNumber.test(digits) || /__|_\.|\._|_$|^[+-]?_/.test(digits)) return undefined;
  const n = Number(digits.replace(/_/g, ""));
  return Number.isNaN(n) ? undefined : suffix ? n * shortSuffixes[suffix]! : n;
}

/** Microseconds per duration unit. */
const durationUnits: Record<string, number> = {
  ns: 1e-3, us: 1, "µs": 1, "μs": 1, ms: 1e3, s: 1e6, m: 60e6, h: 3600e6, d: 86_400e6, w: 7 * 86_400e6, y: 365 * 86_400e6,
};

const durationPart = /(\d[\d_]*(?:\.\d[\d_]*)?|\.\d[\d_]*)(ns|us|µs|μs|ms|s|m|h|d|w|y)/y;

/** A LogsQL duration (`1.5s`, `1h30m`, `250ms`, `-5m`) in µs, or undefined. */
export function parseDuration(text: string): number | undefined {
  let i = 0;
  let sign = 1;
  if (text.startsWith("-") || text.startsWith("+")) {
    sign = text.startsWith("-") ? -1 : 1;
    i = 1;
  }
  if (i === text.length) return undefined;
  let total = 0;
  while (i < text.length) {
    durationPart.lastIndex = i;
    const m = durationPart.exec(text);
    if (!m) return undefined;
    total += Number(m[1]!.replace(/_/g, "")) * durationUnits[m[2]!]!;
    i = durationPart.lastIndex;
  }
  return sign * total;
}

/** A time as LogsQL reads it: the instant it names and the last µs of the period it spells (a day, an hour, …). */
export interface TimeValue {
  start: number;
  /** Inclusive: `2026-11-20` ends at 2026-11-20T23:59:59.999999Z. */
  end: number;
}

const timeText =
  /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:[T ](\d{2})(?::(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?)?)?)?(Z|z|[+-]\d{2}:\d{2})?$/;

/**
 * A time (`2026`, `2026-11`, `2026-11-20`, `2026-11-20T10`, `…T10:30`,
 * `…T10:30:15.5`, each with `Z` or `±hh:mm` or nothing for UTC; Unix
 * seconds; `now`, `now-1h`) in µs since the epoch, or undefined.
 */
export function parseTime(text: string, nowUs: number): TimeValue | undefined {
  if (/^now$/i.test(text)) return { start: nowUs, end: nowUs };
  const relative = /^now([+-].+)$/i.exec(text);
  if (relative) {
    const d = parseDuration(relative[1]!);
    return d === undefined ? undefined : { start: nowUs + d, end: nowUs + d };
  }
  const m = timeText.exec(text);
  if (!m) {
    // Unix seconds (more than four digits: four alone are a year).
    if (!/^\d{5,}(\.\d+)?$/.test(text)) return undefined;
    const us = Math.round(Number(text) * 1e6);
    return { start: us, end: us };
  }
  const [, y, mo, d, h, mi, s, frac, zone] = m;
  const num = (v: string | undefined, dflt: number) => (v === undefined ? dflt : Number(v));
  const month = num(mo, 1);
  const day = num(d, 1);
  const hour = num(h, 0);
  const minute = num(mi, 0);
  const second = num(s, 0);
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) return undefined;
  const offsetMinutes =
    zone === undefined || zone === "Z" || zone === "z"
      ? 0
      : (zone.startsWith("-") ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4, 6)));
  const fracUs = frac === undefined ? 0 : Math.floor(Number(`0.${frac}`) * 1e6 + 1e-6);
  const at = (yy: number, mm: number, dd: number, hh: number, mn: number, ss: number) =>
    (Date.UTC(yy, mm - 1, dd, hh, mn, ss) - offsetMinutes * 60_000) * 1000;
  const year = Number(y);
  const start = at(year, month, day, hour, minute, second) + fracUs;
  if (new Date(Date.UTC(year, month - 1, day)).getUTCDate() !== day) return undefined;
  let next: number;
  if (mo === undefined) next = at(year + 1, 1, 1, 0, 0, 0);
  else if (d === undefined) next = at(year, month + 1, 1, 0, 0, 0);
  else if (h === undefined) next = start + 86_400e6;
  else if (mi === undefined) next = start + 3600e6;
  else if (s === undefined) next = start + 60e6;
  else if (frac === undefined) next = start + 1e6;
  else next = start + 10 ** Math.max(0, 6 - frac.length);
  return { start, end: next - 1 };
}

/** µs since the epoch as RFC 3339 in UTC, the fraction of a second without trailing zeros (as LogsQL prints `_time`). */
export function formatTime(us: number): string {
  const ms = Math.floor(us / 1000);
  const micros = us - ms * 1000;
  const date = new Date(ms);
  if (Number.isNaN(date.getTime())) return String(us);
  const iso = date.toISOString(); // yyyy-mm-ddThh:mm:ss.mmmZ
  const fraction = `${iso.slice(20, 23)}${String(micros).padStart(3, "0")}`.replace(/0+$/, "");
  return `${iso.slice(0, 19)}${fraction ? `.${fraction}` : ""}Z`;
}

/** A dotted IPv4 address as a 32-bit number, or undefined. */
export function ipv4(text: string): number | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (!m) return undefined;
  const parts = m.slice(1).map(Number);
  if (parts.some((p) => p > 255)) return undefined;
  return ((parts[0]! * 256 + parts[1]!) * 256 + parts[2]!) * 256 + parts[3]!;
}

/** A CIDR (`10.0.0.0/8`) or one address as the range of 32-bit numbers it covers, or undefined. */
export function cidr(text: string): { min: number; max: number } | undefined {
  const [address, bits, ...rest] = text.split("/");
  const ip = ipv4(address!);
  if (ip === undefined || rest.length > 0) return undefined;
  if (bits === undefined) return { min: ip, max: ip };
  if (!/^\d{1,2}$/.test(bits) || Number(bits) > 32) return undefined;
  const size = 2 ** (32 - Number(bits));
  const min = Math.floor(ip / size) * size;
  return { min, max: min + size - 1 };
}

/** How the dashboard writes numbers, sizes, durations and times (UTC, as the CLI does). */

import { levelNames } from "../src/domain/levels.js";

const integer = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

export function formatCount(n: number | bigint): string {
  return integer.format(n);
}

/** Three significant digits at most, never an exponent: 0.00312, 41.7, 12,345. */
export function formatRate(n: number): string {
  if (n === 0) return "0";
  if (Math.abs(n) >= 1000) return integer.format(n);
  return Number(n.toPrecision(3)).toString();
}

export function formatPercent(part: number, whole: number): string {
  if (whole === 0) return "–";
  const p = (100 * part) / whole;
  return `${p === 0 ? "0" : p < 0.1 ? "<0.1" : formatRate(p)}%`;
}

const byteUnits = ["B", "KB", "MB", "GB", "TB", "PB"];

/** Bytes in powers of 1000 (as `du --si` and the CLI's usage table). */
export function formatBytes(n: number | bigint): string {
  let value = Number(n);
  let unit = 0;
  while (Math.abs(value) >= 1000 && unit < byteUnits.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${formatRate(value)} ${byteUnits[unit]}`;
}

/** A latency in microseconds: "850 µs", "12.3 ms", "4.56 s". */
export function formatMicros(us: number | bigint): string {
  const n = Number(us);
  if (n < 1000) return `${formatRate(n)} µs`;
  if (n < 1_000_000) return `${formatRate(n / 1000)} ms`;
  return `${formatRate(n / 1_000_000)} s`;
}

/**
 * A finished request's latency, or "no latency" when it has none: a request does not finish in 0 µs, so 0 is a
 * writer that did not know it (an access log without $request_time, whose start is its end).
 */
export function formatLatency(latency: bigint): string {
  return latency === 0n ? "no latency" : formatMicros(latency);
}

/** Microseconds since the epoch → "2026-11-18 12:00:03.250" (UTC). */
export function formatTimeMicros(us: bigint): string {
  const ms = Number(us / 1000n);
  return new Date(ms).toISOString().replace("T", " ").replace("Z", "");
}

/** Seconds since the epoch → "2026-11-18 12:00" (UTC). */
export function formatHour(seconds: number): string {
  return new Date(seconds * 1000).toISOString().slice(0, 16).replace("T", " ");
}

/** How long ago, roughly: "42 s ago", "5 min ago", "3 h ago", "2 d ago". */
export function formatAge(us: bigint, nowMs: number): string {
  const s = Math.max(0, Math.round(nowMs / 1000 - Number(us / 1_000_000n)));
  if (s < 90) return `${s} s ago`;
  if (s < 90 * 60) return `${Math.round(s / 60)} min ago`;
  if (s < 36 * 3600) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

export function levelName(level: number): string {
  return levelNames[level] ?? `LEVEL ${level}`;
}

/** Request ids are bytes: shown as text when they are printable UTF-8, else as hex. */
export function formatRequestId(id: Uint8Array): string {
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(id);
    if (/^[\x20-\x7e]+$/.test(text)) return text;
  } catch {
    // not UTF-8: hex below
  }
  return Array.from(id, (b) => b.toString(16).padStart(2, "0")).join("");
}

import { rangePresets, type ViewState } from "./view-state.js";

const hour = 3600;

/**
 * A range of whole hours (Usage and Stats count in hourly rollups), cut into
 * buckets of `resolutionHours`. Seconds since the epoch; the end is exclusive.
 */
export interface HourRange {
  start: number;
  end: number;
  resolutionHours: number;
}

/**
 * Bucket widths offered, in hours: the smallest that keeps a chart under ~100
 * points wins. No 12 or 48: such buckets alternate day and night and draw the
 * daily rhythm as a saw.
 */
const resolutions = [1, 2, 3, 6, 24, 168];
const maxBuckets = 96;

export function pickResolution(hours: number): number {
  return resolutions.find((r) => hours / r <= maxBuckets) ?? Math.ceil(hours / maxBuckets);
}

/** Rounds a span out to whole hours and picks its bucket width. */
export function hourRange(startSec: number, endSec: number): HourRange {
  const start = Math.floor(startSec / hour) * hour;
  const hours = Math.max(1, Math.ceil(endSec / hour) - start / hour);
  const resolutionHours = pickResolution(hours);
  // Whole buckets only: the last one would otherwise be cut short (and its rate misread).
  return { start, end: start + Math.ceil(hours / resolutionHours) * resolutionHours * hour, resolutionHours };
}

/**
 * The seconds a view's range covers, relative to `nowMs` for the presets;
 * undefined for "all" (the span is then what the server has: see Usage's summary).
 */
export function rangeSeconds(state: Pick<ViewState, "range" | "from" | "to">, nowMs: number): { start?: number; end?: number } {
  if (state.range === "all") return {};
  if (state.range === "custom") return { start: state.from, end: state.to };
  const end = Math.ceil(nowMs / 1000 / hour) * hour;
  return { start: end - rangePresets[state.range] * hour, end };
}

/** The start of each bucket of a range. */
export function bucketStarts(range: HourRange): number[] {
  const width = range.resolutionHours * hour;
  const starts: number[] = [];
  for (let t = range.start; t < range.end; t += width) starts.push(t);
  return starts;
}

/** The bucket holding `seconds`, or -1 outside the range. */
export function bucketIndex(range: HourRange, seconds: number): number {
  if (seconds < range.start || seconds >= range.end) return -1;
  return Math.floor((seconds - range.start) / (range.resolutionHours * hour));
}

export function bucketSeconds(range: HourRange): number {
  return range.resolutionHours * hour;
}

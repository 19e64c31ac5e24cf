import { sampleValue } from "./metric-text.js";

/** One series of a histogram: counts per bucket (not cumulative; the last is past every bound), sum and count. */
export interface HistogramSeries {
  counts: Float64Array;
  sum: number;
  count: number;
}

/** A histogram's bucket bounds, with what an observation is compared to and how `le` is written. */
export interface HistogramBounds {
  /** Upper bounds in the unit observations come in (µs, bytes), ascending. */
  bounds: readonly number[];
  /** Each bound's `le` text in the exported unit, then "+Inf". */
  le: readonly string[];
  /** Exported unit per observed unit (1e-6: µs observed, seconds exported). */
  scale: number;
}

export function histogramBounds(exported: readonly number[], scale: number): HistogramBounds {
  return {
    // Rounded: 0.075 s is 75,000 µs, not 74,999.99…
    bounds: exported.map((b) => Math.round(b / scale)),
    le: [...exported.map(sampleValue), "+Inf"],
    scale,
  };
}

export function newHistogramSeries(b: HistogramBounds): HistogramSeries {
  return { counts: new Float64Array(b.bounds.length + 1), sum: 0, count: 0 };
}

/** Counts one observation (in the observed unit): in the first bucket whose bound it does not pass. */
export function observe(series: HistogramSeries, b: HistogramBounds, value: number): void {
  const bounds = b.bounds;
  let i = 0;
  while (i < bounds.length && value > bounds[i]!) i++;
  series.counts[i]!++;
  series.sum += value;
  series.count++;
}

/** The `_bucket` (cumulative), `_sum` and `_count` lines of a series whose labels are `labels`. */
export function histogramLines(name: string, labels: string, series: HistogramSeries, b: HistogramBounds): string {
  let text = "";
  let cumulative = 0;
  const prefix = `${name}_bucket{${labels},le="`;
  for (let i = 0; i < b.le.length; i++) {
    cumulative += series.counts[i]!;
    text += `${prefix}${b.le[i]}"} ${cumulative}\n`;
  }
  return `${text}${name}_sum{${labels}} ${sampleValue(series.sum * b.scale)}\n${name}_count{${labels}} ${series.count}\n`;
}

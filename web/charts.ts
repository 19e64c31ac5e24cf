import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { formatHour } from "./format.js";

export interface ChartSeries {
  label: string;
  color: string;
  values: (number | null)[];
  dash?: number[];
  /** On a second y axis, at the right (a figure of another size than the others). */
  right?: boolean;
}

export interface ChartSpec {
  /** Bucket starts, seconds since the epoch. */
  x: number[];
  series: ChartSeries[];
  /** How a value reads on the y axis and in the legend. */
  format: (value: number) => string;
  /** The bucket width, for the legend's time ("12:00, 1 h"). */
  bucketHours: number;
  /** A log scale (latencies, whose percentiles lie orders of magnitude apart). */
  log?: boolean;
  /** Spans to shade behind the lines (seconds since the epoch): when alerts fired. */
  bands?: readonly { from: number; to: number }[];
}

/** The shade of an alert's span: the error red, faint enough to read the lines through. */
const bandFill = "rgba(217, 68, 58, 0.13)";
const bandEdge = "rgba(217, 68, 58, 0.55)";

/** Shades each band over the plot's height, behind the series; a band of a few seconds still shows as a thin strip. */
function drawBands(u: uPlot, bands: readonly { from: number; to: number }[]): void {
  const { left, top, width, height } = u.bbox;
  const ctx = u.ctx;
  ctx.save();
  for (const band of bands) {
    const x0 = Math.max(left, Math.min(left + width, u.valToPos(band.from, "x", true)));
    const x1 = Math.max(left, Math.min(left + width, u.valToPos(band.to, "x", true)));
    const w = Math.max(3 * devicePixelRatio, x1 - x0);
    const x = Math.min(x0, left + width - w);
    ctx.fillStyle = bandFill;
    ctx.fillRect(x, top, w, height);
    ctx.fillStyle = bandEdge;
    ctx.fillRect(x, top, Math.max(1, devicePixelRatio), height);
  }
  ctx.restore();
}

export const palette = {
  blue: "#2f6fdb",
  green: "#2e9e5b",
  orange: "#e08a1e",
  red: "#d9443a",
  purple: "#8a55c9",
  teal: "#1b9aaa",
  gray: "#8a919c",
  ink: "#1d2330",
};

const axis: uPlot.Axis = {
  stroke: "#5b6472",
  grid: { stroke: "#e8ebf0", width: 1 },
  ticks: { stroke: "#d5dae2", width: 1 },
  font: "11px system-ui, sans-serif",
};

const day = (d: Date) => d.toLocaleDateString("en-US", { month: "short", day: "numeric", timeZone: "UTC" });

/** Time ticks in UTC, 24-hour: "14:00", with the day under the first tick and under midnights; days alone when every tick is one. */
function timeTicks(splits: number[]): string[] {
  const dates = splits.map((t) => new Date(t * 1000));
  if (dates.every((d) => d.getUTCHours() === 0 && d.getUTCMinutes() === 0)) return dates.map(day);
  return dates.map((d, i) => {
    const hhmm = d.toISOString().slice(11, 16);
    return i === 0 || hhmm === "00:00" ? `${hhmm}\n${day(d)}` : hhmm;
  });
}

/** Log-axis ticks: the powers of ten in the scale's range, with 2× and 5× between when there are few. */
function logSplits(_u: uPlot, _axis: number, min: number, max: number): number[] {
  const low = Math.floor(Math.log10(Math.max(min, 1e-9)));
  const high = Math.ceil(Math.log10(Math.max(max, 1e-9)));
  const steps = high - low <= 2 ? [1, 2, 5] : [1];
  const splits: number[] = [];
  for (let p = low; p <= high; p++) for (const m of steps) splits.push(m * 10 ** p);
  return splits.filter((v) => v >= min * 0.999 && v <= max * 1.001);
}

/**
 * A time-series chart of bucketed figures (uPlot: canvas, a few KB, fast
 * with thousands of points). It follows its container's width; the returned
 * function destroys it.
 */
export function renderChart(target: HTMLElement, spec: ChartSpec, height = 190): () => void {
  const width = Math.max(200, target.clientWidth);
  const fromZero: uPlot.Scale = { range: (_u, _min, max) => [0, max > 0 ? max * 1.08 : 1] };
  const right = spec.series.some((s) => s.right === true);
  // uPlot passes null for a tick it leaves unlabelled.
  const tickLabels = (_u: uPlot, splits: (number | null)[]) => splits.map((v) => (v === null ? "" : spec.format(v)));
  const options: uPlot.Options = {
    width,
    height,
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
    scales: { x: { time: true }, y: spec.log ? { distr: 3, log: 10 } : fromZero, ...(right ? { right: fromZero } : {}) },
    legend: { live: true },
    hooks: spec.bands && spec.bands.length > 0 ? { drawClear: [(u: uPlot) => drawBands(u, spec.bands!)] } : {},
    cursor: { drag: { x: false, y: false }, points: { size: 6 } },
    series: [
      {
        label: "UTC",
        value: (_u, v) => (v === null ? "" : spec.bucketHours === 1 ? formatHour(v) : `${formatHour(v)} +${spec.bucketHours} h`),
      },
      ...spec.series.map(
        (s): uPlot.Series => ({
          label: s.label,
          stroke: s.color,
          width: 1.75,
          dash: s.dash,
          scale: s.right ? "right" : "y",
          fill: spec.series.length === 1 ? `${s.color}1f` : undefined,
          points: { show: spec.x.length <= 36, size: 4 },
          value: (_u, v) => (v === null ? "" : spec.format(v)),
        }),
      ),
    ],
    axes: [
      { ...axis, size: 40, values: (_u, splits) => timeTicks(splits) },
      { ...axis, size: 64, values: tickLabels, ...(spec.log ? { splits: logSplits, filter: (_u, splits) => splits } : {}) },
      ...(right ? [{ ...axis, side: 1, scale: "right", size: 64, grid: { show: false }, values: tickLabels }] : []),
    ],
  };
  const chart = new uPlot(options, [spec.x, ...spec.series.map((s) => s.values)], target);
  const observer = new ResizeObserver(() => {
    const w = Math.max(200, target.clientWidth);
    if (w !== chart.width) chart.setSize({ width: w, height });
  });
  observer.observe(target);
  return () => {
    observer.disconnect();
    chart.destroy();
  };
}

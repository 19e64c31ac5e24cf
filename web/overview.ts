import { type StatsResponse, StatsSplit } from "../gen/reqlog/v1/log_service_pb.js";
import { type Api, Code, describeError, isCancel } from "./api.js";
import { type AlertSpan, alertSpans } from "./alert-periods.js";
import { renderAlerts } from "./alerts.js";
import { type ChartSpec, palette, renderChart } from "./charts.js";
import { emptyNote, fill, h, loadingNote, problemNote, setState } from "./dom.js";
import { moduleVersions } from "./filters.js";
import { formatBytes, formatCount, formatHour, formatMicros, formatPercent, formatRate } from "./format.js";
import { type StatsSeries, statsSeries, type UsageSeries, usageSeries } from "./series.js";
import { bucketSeconds, bucketStarts, type HourRange, hourRange, rangeSeconds } from "./time-range.js";
import { renderTopClients, renderTopRoutes } from "./top-lists.js";
import { emptyRangeNote } from "./newest-request.js";
import { changed, selectionKeys, showProblem, type ViewMount } from "./view-context.js";
import type { ViewState } from "./view-state.js";

/** The range to chart: a preset or custom range as is; "everything stored" as far as Usage has records. */
async function chartRange(api: Api, state: ViewState, nowMs: number, signal: AbortSignal): Promise<HourRange | undefined> {
  const { start, end } = rangeSeconds(state, nowMs);
  if (start !== undefined && end !== undefined) return hourRange(start, Math.max(start, end));
  const usage = await api.usage({ appId: state.app, resolutionHours: 0 }, { signal });
  const summary = usage.summary;
  if (summary === undefined || summary.count === 0n) return undefined;
  return hourRange(start ?? summary.startTime, end ?? summary.endTime);
}

interface Kpi {
  id: string;
  label: string;
  value: number | bigint | undefined;
  text: string;
  sub?: string;
  source: "Usage" | "Stats";
}

function kpiCard(k: Kpi): HTMLElement {
  return h(
    "div",
    { class: k.id === "stats-errors" && Number(k.value ?? 0) > 0 ? "kpi bad" : "kpi", "data-testid": k.id, "data-value": k.value?.toString(), title: `from ${k.source}` },
    h("span", { class: "label" }, k.label),
    h("span", { class: "value" }, k.text),
    h("span", { class: "sub" }, k.sub ?? ""),
  );
}

type Stats = { range: StatsResponse; series: StatsSeries } | { problem: string };

/** The figures of the range at a glance: counts from Usage, errors and latency from Stats. */
function renderKpis(panel: HTMLElement, range: HourRange, module: string, usage: UsageSeries | undefined, stats: Stats | undefined): void {
  const seconds = range.end - range.start;
  const total = stats && "range" in stats ? stats.range.total : undefined;
  const s = stats && "series" in stats ? stats.series.totals : undefined;
  const na = stats && "problem" in stats ? "n/a" : "…";
  // No finished request, no latency: a dash rather than "0 µs".
  const latency = (us: bigint | undefined) => (us === undefined ? na : total?.requests === 0n ? "–" : formatMicros(us));
  const modules = module === "" ? "" : "every module · ";
  const kpis: Kpi[] = [
    {
      id: "usage-requests",
      label: "Requests",
      value: usage?.totals.requests,
      text: usage ? formatCount(usage.totals.requests) : "…",
      sub: usage ? `${modules}${formatRate(usage.totals.requests / seconds)}/s on average` : "",
      source: "Usage",
    },
    {
      id: "stats-errors",
      label: "Server errors (5xx)",
      value: s?.errors,
      text: s ? formatCount(s.errors) : na,
      sub: s ? `${formatPercent(s.errors, s.requests)} of ${formatCount(s.requests)} finished` : "",
      source: "Stats",
    },
    { id: "stats-p50", label: "Latency p50", value: total?.latencyP50, text: latency(total?.latencyP50), sub: total ? `p90 ${latency(total.latencyP90)}` : "", source: "Stats" },
    { id: "stats-p99", label: "Latency p99", value: total?.latencyP99, text: latency(total?.latencyP99), sub: total ? `max ${latency(total.latencyMax)}` : "", source: "Stats" },
    { id: "stats-bytes", label: "Bytes sent", value: s?.bytesSent, text: s ? formatBytes(s.bytesSent) : na, sub: s ? `${formatBytes(s.bytesSent / seconds)}/s` : "", source: "Stats" },
    { id: "usage-bytes", label: "Stored", value: usage?.totals.bytes, text: usage ? formatBytes(usage.totals.bytes) : "…", sub: `${modules}request records`, source: "Usage" },
    { id: "usage-lines", label: "App lines", value: usage?.totals.lines, text: usage ? formatCount(usage.totals.lines) : "…", sub: usage ? `${modules}${formatRate(usage.totals.lines / seconds)}/s` : "", source: "Usage" },
  ];
  fill(panel, ...kpis.map(kpiCard));
  // Ready once Usage and the Stats per bucket are in (or Stats is known to be missing).
  setState(panel, usage !== undefined && stats !== undefined ? "ready" : "loading");
}

interface ChartCard {
  id: string;
  title: string;
  source: "Usage" | "Stats";
  series(usage: UsageSeries, stats: StatsSeries): Omit<ChartSpec, "x" | "bucketHours">;
}

const perSecond = (values: number[], seconds: number) => values.map((v) => v / seconds);
const rateFormat = (unit: string) => (v: number) => `${formatRate(v)}${unit}`;
const versionColors = [palette.purple, palette.teal, palette.orange, palette.green];
const classColors = [palette.gray, palette.gray, palette.green, palette.blue, palette.orange, palette.red];

function chartCards(range: HourRange): ChartCard[] {
  const seconds = bucketSeconds(range);
  return [
    {
      id: "chart-requests",
      title: "Requests per second",
      source: "Usage",
      series: (u) => ({
        series: [
          { label: "all", color: palette.blue, values: perSecond(u.requests, seconds) },
          ...(u.byVersion.length > 1
            ? u.byVersion.slice(0, versionColors.length).map((v, i) => ({ label: v.version, color: versionColors[i]!, values: perSecond(v.requests, seconds), dash: [4, 3] }))
            : []),
        ],
        format: rateFormat("/s"),
      }),
    },
    {
      id: "chart-status",
      title: "Responses per second by status",
      source: "Stats",
      series: (_u, s) => ({
        series: s.byClass
          .map((counts, c) => ({ label: c === 0 ? "other" : `${c}xx`, color: classColors[c]!, values: perSecond(counts, seconds) }))
          .filter((_, c) => s.byClass[c]!.some((v) => v > 0)),
        format: rateFormat("/s"),
      }),
    },
    {
      id: "chart-errors",
      title: "Error rate (5xx)",
      source: "Stats",
      series: (_u, s) => ({
        series: [{ label: "5xx", color: palette.red, values: s.requests.map((r, i) => (r === 0 ? null : (100 * s.errors[i]!) / r)) }],
        format: (v) => `${formatRate(v)}%`,
      }),
    },
    {
      id: "chart-latency",
      title: "Latency percentiles",
      source: "Stats",
      series: (_u, s) => ({
        series: [
          { label: "p50", color: palette.green, values: s.p50 },
          { label: "p90", color: palette.orange, values: s.p90 },
          { label: "p99", color: palette.red, values: s.p99 },
        ],
        format: (v) => formatMicros(v),
        log: true,
      }),
    },
    {
      id: "chart-bytes",
      title: "Bytes per second",
      source: "Stats",
      series: (u, s) => ({
        series: [
          { label: "sent", color: palette.blue, values: perSecond(s.bytesSent, seconds) },
          { label: "stored (right)", color: palette.gray, values: perSecond(u.bytes, seconds), dash: [4, 3], right: true },
        ],
        format: (v) => `${formatBytes(v)}/s`,
      }),
    },
    {
      id: "chart-lines",
      title: "App lines per second",
      source: "Usage",
      series: (u) => ({ series: [{ label: "lines", color: palette.purple, values: perSecond(u.lines, seconds) }], format: rateFormat("/s") }),
    },
  ];
}

const noStats = (stats: Stats | undefined): stats is { problem: string } => stats !== undefined && "problem" in stats;

export const mountOverview: ViewMount = (root, ctx) => {
  const caption = h("p", { class: "caption" });
  const banner = h("div", { class: "banner" });
  const alertsPanel = h("section", { class: "card alerts", "data-testid": "alerts", hidden: true });
  const kpis = h("section", { class: "kpis", "data-testid": "kpis" });
  const charts = h("section", { class: "charts" });
  const routes = h("section", { class: "card routes" });
  const clients = h("section", { class: "card" });
  root.append(caption, banner, alertsPanel, kpis, charts, routes, clients);
  let destroyCharts: (() => void)[] = [];
  let controller: AbortController | undefined;
  /** The range's top lists, for redrawing the top routes in the other order. */
  let lastTop: StatsResponse | undefined;

  const clearCharts = () => {
    destroyCharts.forEach((destroy) => destroy());
    destroyCharts = [];
  };

  const drawCharts = (range: HourRange, usage: UsageSeries | undefined, stats: Stats | undefined, state: ViewState, bands: AlertSpan[]) => {
    clearCharts();
    const empty: StatsSeries = statsSeries(range, undefined);
    fill(
      charts,
      ...chartCards(range).map((card) => {
        const body = h("div", { class: "chart" });
        const note = card.source === "Usage" && state.module !== "" ? "Usage counts every module" : card.source;
        const element = h(
          "div",
          { class: "card chart-card", "data-testid": card.id, "data-alert-bands": bands.length },
          h("div", { class: "card-head" }, h("h3", {}, card.title), h("span", { class: "dim" }, note)),
          body,
        );
        const needsStats = card.source === "Stats";
        if (usage === undefined || (needsStats && stats === undefined)) {
          setState(element, "loading");
          fill(body, loadingNote("the figures"));
        } else if (needsStats && noStats(stats)) {
          setState(element, "error");
          fill(body, emptyNote("Needs the Stats RPC (see above)."));
        } else {
          const made = card.series(usage, stats && "series" in stats ? stats.series : empty);
          if (made.series.length === 0 || usage.totals.requests === 0) {
            setState(element, "empty");
            fill(body, emptyNote("No requests in this range."));
          } else {
            setState(element, "ready");
            // Drawn once the card is in the page, so uPlot sees its width.
            queueMicrotask(() => destroyCharts.push(renderChart(body, { x: usage.x, bucketHours: range.resolutionHours, bands, ...made })));
          }
        }
        return element;
      }),
    );
  };

  const load = async (state: ViewState) => {
    controller?.abort();
    const mine = (controller = new AbortController());
    const signal = mine.signal;
    clearCharts();
    lastTop = undefined;
    caption.textContent = "";
    delete banner.dataset.testid;
    for (const panel of [banner, kpis, charts, routes, clients, alertsPanel]) fill(panel);
    alertsPanel.hidden = true;
    if (state.app === "") {
      fill(banner, emptyNote("Type an app id in the App field above (the app_id your servers write, e.g. forge)."));
      return;
    }
    if (state.range === "custom" && (state.from === undefined || state.to === undefined || state.from >= state.to)) {
      fill(banner, emptyNote("Pick the start and the end of the custom range (UTC), the start first."));
      return;
    }
    setState(kpis, "loading");
    fill(kpis, loadingNote("the range"));
    let range: HourRange | undefined;
    try {
      range = await chartRange(ctx.api, state, ctx.now(), signal);
    } catch (err) {
      if (!signal.aborted && !isCancel(err)) showProblem(kpis, ctx, err, "Cannot read Usage");
      return;
    }
    if (signal.aborted) return;
    if (range === undefined) {
      setState(kpis, "empty");
      fill(kpis, emptyNote(`Nothing is stored for app “${state.app}”.`));
      return;
    }
    const r = range;
    const buckets = bucketStarts(r);
    caption.textContent =
      `${formatHour(r.start)} to ${formatHour(r.end)} UTC · ` +
      `${buckets.length} bucket${buckets.length === 1 ? "" : "s"} of ${r.resolutionHours} h · rates are averages over each bucket`;
    let usage: UsageSeries | undefined;
    let usageFailed = false;
    let stats: Stats | undefined;
    let bands: AlertSpan[] = [];
    const redraw = () => {
      if (signal.aborted || usageFailed) return;
      renderKpis(kpis, r, state.module, usage, stats);
      drawCharts(r, usage, stats, state, bands);
    };
    redraw();
    const usageCall = ctx.api
      .usage(
        { appId: state.app, versionId: state.version !== "" ? [state.version] : [], startTime: r.start, endTime: r.end, resolutionHours: r.resolutionHours },
        { signal },
      )
      .then(
        (answer) => {
          usage = usageSeries(r, answer);
          if (usage.totals.requests === 0) fill(banner, emptyRangeNote(ctx, state, "No requests in this range."));
          redraw();
        },
        (err: unknown) => {
          if (signal.aborted || isCancel(err)) return;
          usageFailed = true;
          clearCharts();
          fill(charts);
          showProblem(kpis, ctx, err, "Cannot read Usage");
        },
      );
    const statsFailed = (err: unknown) => {
      if (signal.aborted || isCancel(err)) return;
      const problem = describeError(err);
      const unserved = problem.code === Code.Unimplemented;
      setState(routes, "error");
      if (problem.code === Code.Unauthenticated) {
        // Usage failed alike: its panel says so once, and the token panel asks.
        fill(routes);
        return;
      }
      fill(routes, unserved ? emptyNote("Top routes need the Stats RPC.") : problemNote(problem, "Cannot load the top routes"));
      if (stats !== undefined) return; // the charts have their figures: only the top lists failed
      stats = { problem: problem.message };
      fill(
        banner,
        problemNote(problem, unserved ? "This server does not serve Stats yet" : "Cannot read Stats"),
        h("p", { class: "hint" }, "Error rates, latency, status classes and top routes need the Stats RPC; requests, stored bytes and app lines come from Usage."),
      );
      banner.dataset.testid = "stats-problem";
      redraw();
    };
    const statsSelection = { appId: state.app, moduleVersion: moduleVersions(state), startTime: BigInt(r.start), endTime: BigInt(r.end) };
    const statsCall = (async () => {
      setState(routes, "loading");
      fill(routes, loadingNote("the top routes"));
      // One call for the view: a figure per chart bucket (percentiles merged on the server), the range's total and the top lists.
      const answer = await ctx.api.stats({ ...statsSelection, resolutionHours: r.resolutionHours, split: StatsSplit.NONE, topN: 10 }, { signal });
      stats = { range: answer, series: statsSeries(r, answer) };
      redraw();
      lastTop = answer;
      renderTopRoutes(routes, ctx, answer);
      setState(routes, answer.topRouteByRequests.length > 0 ? "ready" : "empty");
      renderTopClients(clients, answer);
    })().catch(statsFailed);
    // The app's alerts over the range (a server without --alertmanager-url answers UNIMPLEMENTED: no card then).
    const alertsCall = ctx.api.alerts({ appId: state.app, startTime: BigInt(r.start), endTime: BigInt(r.end) }, { signal }).then(
      (answer) => {
        if (signal.aborted) return;
        const nowSeconds = Math.floor(ctx.now() / 1000);
        alertsPanel.hidden = false;
        renderAlerts(alertsPanel, ctx, answer.alert, nowSeconds);
        setState(alertsPanel, answer.alert.length > 0 ? "ready" : "empty");
        bands = alertSpans(answer.alert, nowSeconds);
        if (bands.length > 0) redraw();
      },
      (err: unknown) => {
        if (signal.aborted || isCancel(err)) return;
        const problem = describeError(err);
        if (problem.code === Code.Unimplemented) return;
        alertsPanel.hidden = false;
        setState(alertsPanel, "error");
        fill(alertsPanel, h("div", { class: "card-head" }, h("h2", {}, "Alerts")), problemNote(problem, "Cannot read the alerts"));
      },
    );
    await Promise.all([usageCall, statsCall, alertsCall]);
  };

  void load(ctx.state());
  return {
    update(state, previous) {
      if (changed(state, previous, selectionKeys)) void load(state);
      else if (state.routesBy !== previous.routesBy && lastTop) renderTopRoutes(routes, ctx, lastTop);
    },
    dispose() {
      controller?.abort();
      clearCharts();
    },
  };
};

import type { QueryColumn, QueryResponse, QuerySummary } from "../gen/reqlog/v1/log_service_pb.js";
import { answerValue } from "../src/client/query-answer.js";
import { formatTime } from "../src/query/logsql/query-values.js";
import { describeError, isCancel } from "./api.js";
import { renderChart, palette } from "./charts.js";
import { emptyNote, fill, h, loadingNote, problemNote, setState } from "./dom.js";
import type { ViewMount } from "./view-context.js";

type Cell = string | number | null;

interface Answer {
  columns: QueryColumn[];
  rows: Cell[][];
  summary?: QuerySummary;
}

const examples = [
  "_time:1h status:>=500 | stats by (route) count() as errors, quantile(0.99, latency) as p99 | sort by (errors desc)",
  '"zip/raw" status:401 | stats by (_time:1h) count() as refused',
  "* | stats by (_time:1h, status_class) count() as requests",
  "latency:>1s | fields _time, method, resource, latency, ip | limit 50",
  "* | top 10 by (user_agent)",
];

const numeric = (c: QueryColumn) => c.type === "int" || c.type === "float" || c.type === "duration";

function shown(value: Cell, column: QueryColumn): string {
  if (value === null) return "";
  if (column.type === "time" && typeof value === "number") return formatTime(value);
  if (typeof value === "number" && column.type === "float") return Number.isInteger(value) ? String(value) : value.toFixed(3);
  return String(value);
}

/** Where a refused query's message says the problem is ("line 2, column 7: …"), as an index into the text. */
export function errorOffset(query: string, message: string): { line: number; column: number; offset: number } | undefined {
  const m = /^line (\d+), column (\d+): /.exec(message);
  if (!m) return undefined;
  const line = Number(m[1]);
  const column = Number(m[2]);
  const lines = query.split("\n");
  if (line < 1 || line > lines.length) return undefined;
  const before = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0);
  // Columns count characters; the text area counts UTF-16 units.
  const head = Array.from(lines[line - 1]!).slice(0, column - 1).join("");
  return { line, column, offset: before + head.length };
}

/** The line of the query the error is on, the character it names marked, and a caret under it. */
function pointer(query: string, message: string): HTMLElement | null {
  const at = errorOffset(query, message);
  if (!at) return null;
  const chars = Array.from(query.split("\n")[at.line - 1]!);
  const i = at.column - 1;
  return h(
    "pre",
    { class: "query-pointer", "data-testid": "query-pointer" },
    chars.slice(0, i).join(""),
    h("mark", {}, chars[i] ?? " "),
    chars.slice(i + 1).join(""),
    "\n",
    " ".repeat(i),
    "^",
  );
}

/**
 * The chart of a time series: rows grouped by `_time` (stats by
 * (_time:1h …)) with numbers. One line per number column; with another group
 * column too (stats by (_time:1h, status)), one line per value of it for the
 * first number column. Requests listed with their `_time` (`| fields _time,
 * latency, resource`) are not one: each resource would be a line of a dot.
 */
function timeSeries(answer: Answer): { x: number[]; series: { label: string; values: (number | null)[] }[] } | undefined {
  const t = answer.columns.findIndex((c) => c.name === "_time" && c.type === "time" && c.group);
  const values = answer.columns.flatMap((c, i) => (numeric(c) && !c.group && i !== t ? [i] : []));
  if (t < 0 || values.length === 0 || answer.rows.length < 2) return undefined;
  const keys = answer.columns.flatMap((_, i) => (i !== t && !values.includes(i) ? [i] : []));
  const x = [...new Set(answer.rows.map((r) => r[t] as number))].sort((a, b) => a - b);
  const at = new Map(x.map((v, i) => [v, i]));
  if (keys.length === 0) {
    return {
      x: x.map((us) => us / 1e6),
      series: values.map((v) => {
        const line: (number | null)[] = x.map(() => null);
        for (const r of answer.rows) line[at.get(r[t] as number)!] = r[v] as number | null;
        return { label: answer.columns[v]!.name, values: line };
      }),
    };
  }
  const v = values[0]!;
  const lines = new Map<string, (number | null)[]>();
  for (const r of answer.rows) {
    const label = keys.map((k) => shown(r[k]!, answer.columns[k]!)).join(" ") || "(empty)";
    if (!lines.has(label)) lines.set(label, x.map(() => null));
    lines.get(label)![at.get(r[t] as number)!] = r[v] as number | null;
  }
  return { x: x.map((us) => us / 1e6), series: [...lines].slice(0, 8).map(([label, line]) => ({ label, values: line })) };
}

/**
 * Explore: a query in reqlog's LogsQL (docs/query.md) over the app's
 * requests, the answer as a table, and a chart when it is a time series.
 * The query is in the URL (`q`), so a view is shared by its link.
 */
export const mountExplore: ViewMount = (root, ctx) => {
  const box = h("textarea", {
    id: "query",
    name: "q",
    rows: 3,
    spellcheck: "false",
    autocomplete: "off",
    placeholder: "e.g. _time:1h status:>=500 | stats by (route) count() as errors",
    "aria-label": "Query",
  });
  const form = h(
    "form",
    { class: "explore-form", role: "search" },
    box,
    h(
      "div",
      { class: "explore-actions" },
      h("button", { type: "submit", class: "primary" }, "Run"),
      h("span", { class: "dim" }, "Ctrl+Enter runs · "),
      h("a", { href: "https://docs.victoriametrics.com/victorialogs/logsql/", target: "_blank", rel: "noreferrer" }, "LogsQL"),
      h("span", { class: "dim" }, " subset: docs/query.md"),
    ),
    h(
      "div",
      { class: "examples" },
      h("span", { class: "dim" }, "Try: "),
      ...examples.map((q) => h("a", { href: ctx.href({ q }), class: "example", onclick: (e: Event) => {
        e.preventDefault();
        ctx.update({ q }, "push");
      } }, q)),
    ),
  );
  const problem = h("div", { class: "query-problem", "data-testid": "query-problem" });
  const summary = h("p", { class: "caption", "data-testid": "query-summary" });
  const chart = h("section", { class: "card chart-card", "data-testid": "query-chart", hidden: true });
  const results = h("section", { class: "card results", "data-testid": "query-results" });
  root.append(form, problem, chart, summary, results);

  const run = () => ctx.update({ q: box.value }, "push");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    run();
  });
  box.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      run();
    }
  });

  let controller: AbortController | undefined;
  let destroyChart: (() => void) | undefined;

  const load = async (app: string, query: string) => {
    controller?.abort();
    destroyChart?.();
    destroyChart = undefined;
    fill(problem);
    fill(summary);
    chart.hidden = true;
    box.classList.remove("invalid");
    if (app === "") {
      fill(results, emptyNote("Type an app id in the App field above."));
      return;
    }
    if (query.trim() === "") {
      fill(results, emptyNote("Write a query above, or try one of the examples."));
      setState(results, "empty");
      return;
    }
    const mine = (controller = new AbortController());
    setState(results, "loading");
    fill(results, loadingNote("the answer"));
    const answer: Answer = { columns: [], rows: [] };
    try {
      for await (const message of ctx.api.query({ appId: app, query }, { signal: mine.signal }) as AsyncIterable<QueryResponse>) {
        if (message.column.length > 0) answer.columns = message.column;
        for (const row of message.row) answer.rows.push(row.value.map(answerValue));
        if (message.summary) answer.summary = message.summary;
      }
    } catch (err) {
      if (mine.signal.aborted || isCancel(err)) return;
      const p = describeError(err);
      const at = errorOffset(query, p.message);
      if (at) {
        box.classList.add("invalid");
        box.focus();
        box.setSelectionRange(at.offset, at.offset + 1);
      }
      fill(problem, problemNote(p, "The query was refused"), pointer(query, p.message));
      fill(results);
      setState(results, "error");
      if (p.code === 16) ctx.askForToken();
      return;
    }
    if (mine.signal.aborted) return;
    const s = answer.summary;
    fill(
      summary,
      `${answer.rows.length} row${answer.rows.length === 1 ? "" : "s"}`,
      s ? ` · from ${s.source === "rollups" ? "the Stats rollups" : s.source === "index" ? "the search index" : s.source === "sql" ? "ClickHouse" : "a scan"}` : "",
      s?.scanned !== undefined && s.source !== "rollups" ? ` · ${Number(s.scanned).toLocaleString("en-US")} requests examined` : "",
      s?.partial ? h("span", { class: "bad partial", "data-testid": "query-partial" }, ` · ${s.partial}`) : "",
    );
    if (answer.rows.length === 0) {
      fill(results, emptyNote("No rows: nothing matched."));
      setState(results, "empty");
      return;
    }
    fill(
      results,
      h(
        "div",
        { class: "table-scroll" },
        h(
          "table",
          { class: "grid compact", "data-testid": "query-table" },
          h("thead", {}, h("tr", {}, ...answer.columns.map((c) => h("th", { class: numeric(c) ? "num" : "", title: c.type }, c.name)))),
          h(
            "tbody",
            {},
            ...answer.rows.map((r) =>
              h("tr", {}, ...r.map((v, i) => h("td", { class: numeric(answer.columns[i]!) ? "num" : "text" }, shown(v, answer.columns[i]!)))),
            ),
          ),
        ),
      ),
    );
    setState(results, "ready");
    const ts = timeSeries(answer);
    if (ts) {
      chart.hidden = false;
      const body = h("div", { class: "chart" });
      fill(chart, h("div", { class: "card-head" }, h("h3", {}, "Over time (UTC)")), body);
      const colors = Object.values(palette);
      const bucketHours = ts.x.length > 1 ? (ts.x[1]! - ts.x[0]!) / 3600 : 1;
      destroyChart = renderChart(body, {
        x: ts.x,
        series: ts.series.map((s, i) => ({ label: s.label, color: colors[i % colors.length]!, values: s.values })),
        format: (v) => (Math.abs(v) >= 1000 ? v.toLocaleString("en-US", { maximumFractionDigits: 0 }) : String(Math.round(v * 100) / 100)),
        bucketHours,
      }, 240);
    }
  };

  const state = ctx.state();
  box.value = state.q;
  void load(state.app, state.q);
  return {
    update(next, previous) {
      if (document.activeElement !== box || next.q !== previous.q) box.value = next.q;
      if (next.app !== previous.app || next.q !== previous.q) void load(next.app, next.q);
    },
    dispose() {
      controller?.abort();
      destroyChart?.();
    },
  };
};

import type { RequestLog } from "../gen/reqlog/v1/log_service_pb.js";
import { h } from "./dom.js";
import { formatBytes, formatLatency, formatRequestId, formatTimeMicros, levelName } from "./format.js";
import { toBase64Url } from "./ids.js";

/** Column titles and the class of their cells (widths in style.css). */
const requestColumns: [string, string][] = [
  ["Time (UTC)", "time"],
  ["Status", "status-cell"],
  ["Method", "method"],
  ["Resource", "resource"],
  ["Latency", "num latency"],
  ["Size", "num size"],
  ["Host", "host"],
  ["Version", "version"],
  ["Lines", "lines"],
];

export function statusClassName(status: number): string {
  return status >= 500 ? "s5" : status >= 400 ? "s4" : status >= 300 ? "s3" : status >= 200 ? "s2" : "s0";
}

export function levelBadge(level: number): HTMLElement {
  return h("span", { class: `level l${level}` }, levelName(level));
}

/** The most severe of a request's lines, and how many there are ("5+" when the page has only the first ones). */
function linesCell(log: RequestLog): HTMLElement {
  if (log.line.length === 0) return h("td", { class: "lines dim" }, "–");
  const worst = Math.max(...log.line.map((l) => l.level));
  return h("td", { class: "lines" }, levelBadge(worst), ` ${log.line.length}${log.linesIncomplete ? "+" : ""}`);
}

/**
 * One request as a table row (the search results and the live tail): its
 * sort time (the end, or the start while in progress), status and request
 * line. `open` shows its detail.
 */
export function requestRow(log: RequestLog, selected: boolean, open: (id: string) => void): HTMLTableRowElement {
  const id = toBase64Url(log.requestId);
  const time = log.finished ? log.endTime : log.startTime;
  return h(
    "tr",
    {
      class: selected ? "request selected" : "request",
      "data-request-id": formatRequestId(log.requestId),
      "data-key": id,
      tabindex: 0,
      onclick: () => open(id),
      onkeydown: (event: Event) => {
        if ((event as KeyboardEvent).key === "Enter") open(id);
      },
    },
    h("td", { class: "time" }, formatTimeMicros(time)),
    h("td", { class: "status-cell" }, log.finished ? h("span", { class: `status ${statusClassName(log.status)}` }, log.status) : h("span", { class: "status live" }, "in progress")),
    h("td", { class: "method" }, log.method),
    h("td", { class: "resource", title: log.resource }, log.resource),
    h("td", { class: "num latency" }, log.finished ? formatLatency(log.latency) : "–"),
    h("td", { class: "num size" }, formatBytes(log.responseSize)),
    h("td", { class: "host" }, log.host ?? ""),
    h("td", { class: "version" }, log.moduleId === "default" ? log.versionId : `${log.moduleId}:${log.versionId}`),
    linesCell(log),
  );
}

export function requestTable(rows: HTMLTableRowElement[], testid: string): HTMLTableElement {
  return h(
    "table",
    { class: "grid requests", "data-testid": testid },
    h("thead", {}, h("tr", {}, ...requestColumns.map(([title, cls]) => h("th", { class: cls }, title)))),
    h("tbody", {}, ...rows),
  );
}

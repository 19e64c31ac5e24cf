import { type Alert, AlertState } from "../gen/reqlog/v1/log_service_pb.js";
import { fill, h } from "./dom.js";
import { alertRequestsPatch } from "./alert-periods.js";
import { formatHour } from "./format.js";
import type { ViewContext } from "./view-context.js";

const stateNames: Record<AlertState, string> = {
  [AlertState.UNSPECIFIED]: "unknown",
  [AlertState.FIRING]: "firing",
  [AlertState.SUPPRESSED]: "silenced",
  [AlertState.RESOLVED]: "resolved",
};

function duration(seconds: number): string {
  if (seconds < 90) return `${Math.max(0, Math.round(seconds))} s`;
  if (seconds < 90 * 60) return `${Math.round(seconds / 60)} min`;
  if (seconds < 48 * 3600) return `${Math.round(seconds / 360) / 10} h`;
  return `${Math.round(seconds / 8640) / 10} d`;
}

function alertRow(ctx: ViewContext, alert: Alert, nowSeconds: number): HTMLElement {
  const state = stateNames[alert.state];
  const start = Number(alert.startTime);
  const when =
    alert.state === AlertState.RESOLVED
      ? `${formatHour(start)} to ${formatHour(Number(alert.endTime))} UTC (${duration(Number(alert.endTime) - start)})`
      : `since ${formatHour(start)} UTC (${duration(nowSeconds - start)})`;
  const patch = alertRequestsPatch(alert, nowSeconds);
  return h(
    "li",
    { class: `alert ${state}`, "data-testid": "alert", "data-alert": alert.name, "data-state": state },
    h(
      "div",
      { class: "alert-head" },
      h("span", { class: `badge ${state}` }, state),
      h("strong", { class: "alert-name" }, alert.name),
      alert.severity !== "" && h("span", { class: "dim" }, alert.severity),
      alert.route !== "" && h("code", { class: "alert-route" }, alert.route),
      h("span", { class: "dim" }, when),
    ),
    // A resolved alert keeps one line: what fired, where and when, and its requests.
    alert.state !== AlertState.RESOLVED && alert.summary !== "" && h("p", { class: "alert-summary" }, alert.summary),
    alert.state !== AlertState.RESOLVED && alert.runbook !== "" && h("p", { class: "alert-runbook" }, h("span", { class: "dim" }, "Runbook: "), alert.runbook),
    h(
      "p",
      { class: "alert-links" },
      h(
        "a",
        {
          href: ctx.href(patch),
          "data-testid": "alert-requests",
          title: "The requests of this alert's route over its period",
          onclick: (event: Event) => {
            event.preventDefault();
            ctx.update(patch, "push");
          },
        },
        alert.route !== "" ? "Requests of this route then" : "Requests then",
      ),
      // Links the rules wrote (a runbook page, Prometheus's graph) open elsewhere; only http(s) ones are made links.
      ...[
        ["runbook", alert.runbookUrl],
        ["graph", alert.generatorUrl],
      ]
        .filter(([, url]) => /^https?:\/\//i.test(url!))
        .map(([label, url]) => h("a", { href: url!, target: "_blank", rel: "noopener noreferrer" }, label!)),
    ),
  );
}

/** Resolved alerts listed before the rest are summed up in one line. */
const maxResolvedShown = 5;

/** The alerts card: firing (and silenced) alerts first, then those resolved in the range, the latest few. */
export function renderAlerts(panel: HTMLElement, ctx: ViewContext, alerts: readonly Alert[], nowSeconds: number): void {
  const firing = alerts.filter((a) => a.state !== AlertState.RESOLVED).length;
  const shown = alerts.slice(0, firing + maxResolvedShown);
  const more = alerts.length - shown.length;
  fill(
    panel,
    h(
      "div",
      { class: "card-head" },
      h("h2", {}, "Alerts"),
      h("span", { class: firing > 0 ? "bad" : "dim", "data-testid": "alerts-firing" }, firing > 0 ? `${firing} firing` : "none firing"),
    ),
    alerts.length === 0
      ? h("p", { class: "note empty" }, "No alert fired for this app in this range.")
      : h("ul", { class: "alert-list" }, ...shown.map((a) => alertRow(ctx, a, nowSeconds))),
    more > 0 && h("p", { class: "note dim", "data-testid": "alerts-more" }, `and ${more} more resolved in this range (the charts mark them all)`),
  );
}

import { isFieldSet } from "@bufbuild/protobuf";
import {
  type StatsClient,
  StatsClientSchema,
  type StatsFigures,
  type StatsResponse,
  type StatsRoute,
  StatsRouteSchema,
} from "../gen/reqlog/v1/log_service_pb.js";
import { emptyNote, fill, h } from "./dom.js";
import { formatBytes, formatCount, formatMicros, formatPercent } from "./format.js";
import { routeRegex } from "./route-regex.js";
import type { ViewContext } from "./view-context.js";

function bar(part: bigint, whole: bigint): HTMLElement {
  const share = whole > 0n ? Number((part * 1000n) / whole) / 10 : 0;
  return h("span", { class: "share", title: `${share}% of the requests` }, h("span", { style: `width:${Math.max(share, 0.5)}%` }));
}

function routeRow(ctx: ViewContext, route: StatsRoute, total: bigint): HTMLElement {
  const f: Partial<StatsFigures> = route.figures ?? {};
  const name = isFieldSet(route, StatsRouteSchema.field.route) ? route.route : undefined;
  const regex = name === undefined ? undefined : routeRegex(name);
  const label = name === undefined ? h("span", { class: "dim" }, "(other routes, beyond the per-hour bound)") : name;
  const link =
    regex === undefined
      ? label
      : h(
          "a",
          {
            href: ctx.href({ view: "requests", regex, offset: "", request: "" }),
            title: "Search the requests of this route",
            onclick: (event: Event) => {
              event.preventDefault();
              ctx.update({ view: "requests", regex, offset: "", request: "" }, "push");
            },
          },
          label,
        );
  const requests = f.requests ?? 0n;
  const errors = f.errors ?? 0n;
  return h(
    "tr",
    {},
    h("td", { class: "route" }, link),
    h("td", { class: "num" }, formatCount(requests)),
    h("td", { class: "bar" }, bar(requests, total)),
    h("td", { class: errors > 0n ? "num bad" : "num" }, formatPercent(Number(errors), Number(requests))),
    h("td", { class: "num" }, formatMicros(f.latencyP50 ?? 0n)),
    h("td", { class: "num" }, formatMicros(f.latencyP90 ?? 0n)),
    h("td", { class: "num strong" }, formatMicros(f.latencyP99 ?? 0n)),
    h("td", { class: "num dim" }, formatMicros(f.latencyMax ?? 0n)),
    h("td", { class: "num" }, formatBytes(f.bytesSent ?? 0n)),
  );
}

/** The top-routes table of a Stats answer, by requests or by p99, with a toggle between the two. */
export function renderTopRoutes(panel: HTMLElement, ctx: ViewContext, stats: StatsResponse): void {
  const by = ctx.state().routesBy;
  const routes = by === "p99" ? stats.topRouteByP99 : stats.topRouteByRequests;
  const total = stats.total?.requests ?? 0n;
  const toggle = (value: "requests" | "p99", label: string) =>
    h("button", { type: "button", class: by === value ? "toggle on" : "toggle", "aria-pressed": String(by === value), onclick: () => ctx.update({ routesBy: value }, "replace") }, label);
  fill(
    panel,
    h("div", { class: "card-head" }, h("h2", {}, "Top routes"), h("span", { class: "toggles" }, toggle("requests", "by requests"), toggle("p99", "slowest p99"))),
    routes.length === 0
      ? emptyNote("No finished requests in this range.")
      : h(
          "table",
          { class: "grid", "data-testid": "top-routes" },
          h(
            "thead",
            {},
            h("tr", {}, ...["Route", "Requests", "Share", "5xx", "p50", "p90", "p99", "Max", "Sent"].map((c, i) => h("th", { class: i === 0 || i === 2 ? "" : "num" }, c))),
          ),
          h("tbody", {}, ...routes.map((r) => routeRow(ctx, r, total))),
        ),
  );
}

/**
 * Named clients first, most requests first; the ones beyond the bound (no
 * name: servers before the summaries) counted together, last. Estimated
 * counts (the range had more distinct names than the summaries hold) are
 * marked ≈, with their error bound in a tooltip.
 */
function clientTable(title: string, all: StatsClient[]): HTMLElement {
  const named = (c: StatsClient) => isFieldSet(c, StatsClientSchema.field.name);
  const clients = [...all.filter(named), ...all.filter((c) => !named(c))];
  const estimated = clients.some((c) => c.maxError > 0n);
  return h(
    "div",
    { class: "clients" },
    h("h3", {}, title),
    estimated ? h("p", { class: "hint" }, "≈ estimated: more distinct names than the top-100 summaries of an hour or day hold") : "",
    clients.length === 0
      ? emptyNote("None in this range.")
      : h(
          "table",
          { class: "grid compact" },
          h("tbody", {}, ...clients.map((c) =>
            h(
              "tr",
              {},
              h("td", { class: "name" }, named(c) ? c.name : h("span", { class: "dim" }, "(the rest, beyond the per-hour bound)")),
              c.maxError > 0n
                ? h("td", { class: "num", title: `an estimate: within ±${formatCount(c.maxError)} of the exact count` }, `≈${formatCount(c.requests)}`)
                : h("td", { class: "num" }, formatCount(c.requests)),
              h("td", { class: c.errors > 0n ? "num bad" : "num dim" }, c.errors > 0n ? `${formatCount(c.errors)} 5xx` : ""),
            ),
          )),
        ),
  );
}

/** The top client IPs and user agents of a Stats answer. */
export function renderTopClients(panel: HTMLElement, stats: StatsResponse): void {
  fill(
    panel,
    h("div", { class: "card-head" }, h("h2", {}, "Top clients")),
    h("div", { class: "client-lists" }, clientTable("IP addresses", stats.topClientIp), clientTable("User agents", stats.topUserAgent)),
  );
}

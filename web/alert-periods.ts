/**
 * An alert's period as the dashboard uses it, apart from the DOM (so it is
 * tested as a model): the span its charts shade, and the Requests view its
 * link opens.
 */
import { type Alert, AlertState } from "../gen/reqlog/v1/log_service_pb.js";
import { routeRegex } from "./route-regex.js";
import type { ViewState } from "./view-state.js";

/** A span an alert fired over, in seconds since the epoch, for a chart to mark. */
export interface AlertSpan {
  from: number;
  to: number;
  name: string;
}

/** When an alert's period ends: when it was resolved, or now while it fires. */
const periodEnd = (alert: Alert, nowSeconds: number): number =>
  alert.state === AlertState.RESOLVED && alert.endTime !== 0n ? Number(alert.endTime) : nowSeconds;

/** Where alerts are drawn on charts: from their start to their end, or to now while they fire. */
export function alertSpans(alerts: readonly Alert[], nowSeconds: number): AlertSpan[] {
  return alerts.map((a) => ({
    from: Number(a.startTime),
    to: periodEnd(a, nowSeconds),
    name: a.name,
  }));
}

/** A minute either side of an alert's period: the requests that made it, and those just before. */
const margin = 60;

/**
 * The Requests view of an alert: its route's requests (when the alert is
 * about a route) over its period, from a minute before it started to a
 * minute after it ended (or now).
 */
export function alertRequestsPatch(alert: Alert, nowSeconds: number): Partial<ViewState> {
  const regex = alert.route === "" ? undefined : routeRegex(alert.route);
  return {
    view: "requests",
    range: "custom",
    from: Number(alert.startTime) - margin,
    to: periodEnd(alert, nowSeconds) + margin,
    regex: regex ?? "",
    offset: "",
    request: "",
  };
}

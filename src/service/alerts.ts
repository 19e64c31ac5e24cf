import { create, isFieldSet } from "@bufbuild/protobuf";
import {
  type Alert,
  AlertSchema,
  type AlertsRequest,
  AlertsRequestSchema,
  type AlertsResponse,
  AlertsResponseSchema,
  AlertState,
} from "../../gen/reqlog/v1/log_service_pb.js";
import type { AppAlert } from "../domain/app-alert.js";
import { Code, ReqlogError } from "../reqlog-error.js";
import type { UnaryHandler } from "./call-context.js";
import type { ServiceDeps } from "./service-deps.js";

const states = { firing: AlertState.FIRING, suppressed: AlertState.SUPPRESSED, resolved: AlertState.RESOLVED } as const;

function alertMessage(a: AppAlert): Alert {
  const optional = (name: string, value: string | undefined) => (value === undefined || value === "" ? {} : { [name]: value });
  return create(AlertSchema, {
    name: a.labels.alertname ?? "",
    state: states[a.state],
    startTime: BigInt(a.startsAt),
    ...(a.endedAt !== undefined ? { endTime: BigInt(a.endedAt) } : {}),
    ...optional("route", a.labels.http_route),
    ...optional("severity", a.labels.severity),
    ...optional("summary", a.annotations.summary),
    ...optional("runbook", a.annotations.runbook),
    ...optional("runbookUrl", a.annotations.runbook_url),
    label: Object.entries(a.labels)
      .sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))
      .map(([name, value]) => ({ name, value })),
    fingerprint: a.fingerprint,
    ...optional("generatorUrl", a.generatorUrl),
  });
}

/** Alerts: the alerts of an app that Alertmanager holds or held (serve --alertmanager-url), for the dashboard. */
export function createAlertsHandler({ alerts }: ServiceDeps): UnaryHandler<AlertsRequest, AlertsResponse> {
  return async (request, call) => {
    const f = AlertsRequestSchema.field;
    if (!isFieldSet(request, f.appId) || request.appId === "") throw ReqlogError.invalid("required field not set: app_id");
    const from = isFieldSet(request, f.startTime) ? Number(request.startTime) : undefined;
    const to = isFieldSet(request, f.endTime) ? Number(request.endTime) : undefined;
    if (from !== undefined && to !== undefined && from > to) {
      throw ReqlogError.invalid(`start_time (${from}) is after end_time (${to})`);
    }
    call.authorize([request.appId]);
    if (alerts === undefined) {
      throw new ReqlogError(Code.UNIMPLEMENTED, "INVALID_REQUEST", "this server shows no alerts: it was started without --alertmanager-url");
    }
    const found = await alerts.alertsOf(request.appId, from, to, call.signal);
    return create(AlertsResponseSchema, { alert: found.map(alertMessage) });
  };
}

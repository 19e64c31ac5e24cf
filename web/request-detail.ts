import { isFieldSet } from "@bufbuild/protobuf";
import { type RequestLog, RequestLogSchema } from "../gen/reqlog/v1/log_service_pb.js";
import { emptyNote, fill, h } from "./dom.js";
import { formatBytes, formatLatency, formatMicros, formatRequestId, formatTimeMicros } from "./format.js";
import { fromBase64Url } from "./ids.js";
import { levelBadge, statusClassName } from "./request-row.js";
import { panelTask, type ViewContext } from "./view-context.js";

type Field = [string, string | undefined];

/** The record's fields worth reading, those the writer left unset left out. */
function fields(log: RequestLog): Field[] {
  const set = (name: keyof typeof RequestLogSchema.field) => isFieldSet(log, RequestLogSchema.field[name]);
  const text = (name: keyof typeof RequestLogSchema.field, value: string) => (set(name) && value !== "" ? value : undefined);
  return [
    ["Request id", formatRequestId(log.requestId)],
    ["Module / version", `${log.moduleId} / ${log.versionId}`],
    ["Started", `${formatTimeMicros(log.startTime)} UTC`],
    ["Ended", log.finished ? `${formatTimeMicros(log.endTime)} UTC` : "in progress"],
    ["Latency", log.finished ? formatLatency(log.latency) : undefined],
    ["Response size", formatBytes(log.responseSize)],
    ["Client IP", text("ip", log.ip)],
    ["Host", text("host", log.host)],
    ["HTTP version", text("httpVersion", log.httpVersion)],
    ["User agent", text("userAgent", log.userAgent)],
    ["Referrer", text("referrer", log.referrer)],
    ["URL map entry", text("urlMapEntry", log.urlMapEntry)],
    ["Instance (replica)", log.replicaIndex >= 0 ? String(log.replicaIndex) : undefined],
    ["Megacycles", set("mcycles") ? String(log.mcycles) : undefined],
    ["Pending time", set("pendingTime") ? formatMicros(log.pendingTime) : undefined],
    ["Loading request", set("wasLoadingRequest") ? String(log.wasLoadingRequest) : undefined],
    ["Task", text("taskName", log.taskName) && `${log.taskQueueName} / ${log.taskName}`],
  ];
}

function detail(log: RequestLog, close: () => void): HTMLElement[] {
  return [
    h(
      "div",
      { class: "card-head" },
      h("h2", {}, h("span", { class: `status ${log.finished ? statusClassName(log.status) : "live"}` }, log.finished ? log.status : "in progress"), " ", log.method, " ", h("span", { class: "resource" }, log.resource)),
      h("button", { type: "button", class: "close", onclick: close, title: "Close the detail" }, "Close"),
    ),
    h("dl", { class: "fields" }, ...fields(log).filter(([, v]) => v !== undefined).flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
    h("h3", {}, "Combined log line"),
    h("pre", { class: "combined" }, log.combined),
    h("h3", {}, `App lines (${log.line.length}${log.linesIncomplete ? ", more not stored" : ""})`),
    log.line.length === 0
      ? emptyNote("This request wrote no app lines.")
      : h(
          "table",
          { class: "grid lines", "data-testid": "app-lines" },
          h("tbody", {}, ...log.line.map((line) =>
            h("tr", { class: `line l${line.level}` }, h("td", { class: "time" }, formatTimeMicros(line.time)), h("td", {}, levelBadge(line.level)), h("td", { class: "message" }, line.logMessage)),
          )),
        ),
  ];
}

/**
 * A request's detail, read by its id with all its app lines (Read with
 * request_id: the record wherever it lies, in progress or not).
 */
export function createRequestDetail(panel: HTMLElement, ctx: ViewContext) {
  const task = panelTask(panel, ctx);
  const close = () => ctx.update({ request: "" }, "push");
  return {
    show(id: string) {
      panel.hidden = id === "";
      panel.parentElement?.classList.toggle("with-detail", id !== "");
      if (id === "") return task.cancel();
      const bytes = fromBase64Url(id);
      if (bytes === undefined) {
        fill(panel, emptyNote("This link's request id is not valid base64url."));
        return;
      }
      const app = ctx.state().app;
      void task.run(
        "the request",
        (signal) => ctx.api.read({ appId: app, requestId: [bytes], includeAppLogs: true, includeIncomplete: true }, { signal }),
        (answer) => {
          const log = answer.log[0];
          if (log === undefined) {
            fill(panel, emptyNote(`No request ${formatRequestId(bytes)} in app ${app} (expired, or written to another app).`), h("button", { type: "button", onclick: close }, "Close"));
            return "empty";
          }
          fill(panel, ...detail(log, close));
          return "ready";
        },
      );
    },
  };
}

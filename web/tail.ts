import type { RequestLog } from "../gen/reqlog/v1/log_service_pb.js";
import { isCancel } from "./api.js";
import { emptyNote, fill, h, setState } from "./dom.js";
import { readFilters } from "./filters.js";
import { formatCount } from "./format.js";
import { toBase64Url } from "./ids.js";
import { createRequestDetail } from "./request-detail.js";
import { requestRow, requestTable } from "./request-row.js";
import { filterForm } from "./search.js";
import { changed, showProblem, type ViewMount } from "./view-context.js";
import type { ViewState } from "./view-state.js";

/** What a Tail follows (it has no time range: it starts now). */
const tailKeys = ["app", "module", "version", "regex", "host", "level", "incomplete"] as const;

/** Rows kept on screen; older ones are dropped as new ones arrive. */
const maxRows = 500;

/**
 * Live tail: a Tail stream with the view's filters; each record is shown as
 * it is committed, newest on top, and a request written again (an
 * in-progress one finishing) is updated in place.
 */
export const mountTail: ViewMount = (root, ctx) => {
  const form = filterForm(ctx, "Follow");
  const status = h("p", { class: "tail-status", "data-testid": "tail-status", role: "status" });
  const pause = h("button", { type: "button" });
  const clear = h("button", { type: "button" }, "Clear");
  const body = h("tbody");
  const table = requestTable([], "tail-list");
  table.tBodies[0]!.replaceWith(body);
  const waiting = emptyNote("Nothing yet: requests appear here as they are written (in-progress ones too when asked for).");
  const list = h("section", { class: "card results" }, h("div", { class: "card-head" }, h("h2", {}, "New requests"), h("span", { class: "toggles" }, pause, clear)), status, table, waiting);
  const detailPanel = h("aside", { class: "card detail", "data-testid": "detail", hidden: true });
  root.append(form.element, h("div", { class: "split" }, list, detailPanel));
  const detail = createRequestDetail(detailPanel, ctx);
  const rows = new Map<string, HTMLTableRowElement>();
  let received = 0;
  let controller: AbortController | undefined;
  let paused = false;

  const open = (id: string) => ctx.update({ request: id }, "push");
  const show = (log: RequestLog) => {
    const key = toBase64Url(log.requestId);
    const row = requestRow(log, key === ctx.state().request, open);
    row.classList.add("fresh");
    const old = rows.get(key);
    if (old) old.remove();
    body.prepend(row);
    rows.set(key, row);
    waiting.hidden = true;
    if (rows.size > maxRows) {
      const [oldest] = rows;
      oldest![1].remove();
      rows.delete(oldest![0]);
    }
  };

  const following = (state: ViewState) => {
    fill(status, h("span", { class: "pulse" }), ` Following new requests of ${state.app}${state.regex ? " matching the filters" : ""} · ${formatCount(received)} received`);
  };

  const follow = async (state: ViewState) => {
    controller?.abort();
    if (state.app === "") {
      setState(status, "empty");
      fill(status, emptyNote("Type an app id in the App field above."));
      return;
    }
    if (paused) {
      setState(status, "ready");
      fill(status, `Paused · ${formatCount(received)} received`);
      return;
    }
    const mine = (controller = new AbortController());
    setState(status, "ready");
    following(state);
    try {
      for await (const answer of ctx.api.tail(readFilters(state), { signal: mine.signal })) {
        for (const log of answer.log) show(log);
        received += answer.log.length;
        following(state);
      }
      setState(status, "empty");
      fill(status, "The server ended the tail (it may be shutting down): Resume to follow again.");
    } catch (err) {
      if (mine.signal.aborted || isCancel(err)) return;
      showProblem(status, ctx, err, "The tail stopped");
    }
  };

  const showPause = () => (pause.textContent = paused ? "Resume" : "Pause");
  pause.addEventListener("click", () => {
    paused = !paused;
    showPause();
    void follow(ctx.state());
  });
  const forget = () => {
    rows.clear();
    body.replaceChildren();
    received = 0;
    waiting.hidden = false;
  };
  clear.addEventListener("click", () => {
    forget();
    if (!paused) following(ctx.state());
  });
  showPause();
  const state = ctx.state();
  form.sync(state);
  void follow(state);
  detail.show(state.request);
  return {
    update(next, previous) {
      form.sync(next);
      if (changed(next, previous, tailKeys)) {
        forget();
        void follow(next);
      }
      if (next.request !== previous.request) {
        detail.show(next.request);
        for (const [key, row] of rows) row.classList.toggle("selected", key === next.request);
      }
    },
    dispose() {
      controller?.abort();
    },
  };
};

import { create } from "@bufbuild/protobuf";
import { type LogReadResponse, LogOffsetSchema } from "../gen/reqlog/v1/log_service_pb.js";
import { emptyNote, fill, h } from "./dom.js";
import { readFilters } from "./filters.js";
import { levelNames } from "../src/domain/levels.js";
import { fromBase64Url, toBase64Url } from "./ids.js";
import { emptyRangeNote } from "./newest-request.js";
import { createRequestDetail } from "./request-detail.js";
import { requestRow, requestTable } from "./request-row.js";
import { rangeSeconds } from "./time-range.js";
import { changed, panelTask, selectionKeys, type ViewContext, type ViewMount } from "./view-context.js";
import type { ViewState } from "./view-state.js";

const pageSize = 50;

/** The Read filters as a form; submitting it starts a new search from the first page. */
export function filterForm(ctx: ViewContext, submitLabel: string): { element: HTMLFormElement; sync(state: ViewState): void } {
  const regex = h("input", { name: "regex", id: "regex", placeholder: 'e.g. "GET /api/v1/repos/[^ ]+/commits', spellcheck: "false", autocomplete: "off" });
  const host = h("input", { name: "host", id: "host-regex", placeholder: "e.g. ^dl\\.", spellcheck: "false", autocomplete: "off" });
  const level = h(
    "select",
    { name: "level", id: "level" },
    h("option", { value: "" }, "any (lines or none)"),
    ...levelNames.map((name, i) => h("option", { value: String(i) }, `${name} or worse`)),
  );
  const incomplete = h("input", { type: "checkbox", name: "incomplete", id: "incomplete" });
  const element = h(
    "form",
    { class: "filters", role: "search" },
    h("label", { class: "field wide" }, h("span", {}, "Combined log regex (RE2)"), regex),
    h("label", { class: "field" }, h("span", {}, "Host regex"), host),
    h("label", { class: "field" }, h("span", {}, "App lines at least"), level),
    h("label", { class: "check" }, incomplete, " include in-progress"),
    h("button", { type: "submit", class: "primary" }, submitLabel),
  );
  element.addEventListener("submit", (event) => {
    event.preventDefault();
    ctx.update(
      {
        regex: regex.value,
        host: host.value,
        level: level.value === "" ? undefined : Number(level.value),
        incomplete: incomplete.checked,
        offset: "",
        request: "",
      },
      "push",
    );
  });
  return {
    element,
    sync(state) {
      regex.value = state.regex;
      host.value = state.host;
      level.value = state.level?.toString() ?? "";
      incomplete.checked = state.incomplete;
    },
  };
}

/** The fields that choose which requests are listed. */
const filterKeys = [...selectionKeys, "regex", "host", "level", "incomplete"] as const;

/**
 * Request search: Read with the view's filters and range, a page at a time
 * (Newer/Older through Read's offsets, the current one in the URL), and the
 * detail of the request picked.
 */
export const mountSearch: ViewMount = (root, ctx) => {
  const form = filterForm(ctx, "Search");
  const results = h("section", { class: "card results", "data-testid": "results" });
  const detailPanel = h("aside", { class: "card detail", "data-testid": "detail", hidden: true });
  root.append(form.element, h("div", { class: "split" }, results, detailPanel));
  const task = panelTask(results, ctx);
  const detail = createRequestDetail(detailPanel, ctx);
  /** Offsets of the pages before this one, for Newer (the URL keeps only the current one). */
  let newer: string[] = [];

  const pager = (state: ViewState, answer: LogReadResponse) => {
    const next = answer.offset?.requestId;
    const go = (offset: string, back: boolean) => {
      if (back) newer.pop();
      else newer.push(state.offset);
      ctx.update({ offset, request: "" }, "push");
    };
    return h(
      "div",
      { class: "pager" },
      state.offset === ""
        ? null
        : newer.length > 0
          ? h("button", { type: "button", onclick: () => go(newer[newer.length - 1]!, true) }, "← Newer")
          : h("button", { type: "button", onclick: () => go("", true) }, "⇤ Newest"),
      h("span", { class: "dim" }, `${answer.log.length} request${answer.log.length === 1 ? "" : "s"} on this page${newer.length > 0 ? ` · page ${newer.length + 1}` : ""}`),
      next === undefined ? h("span", { class: "dim" }, "· end of the results") : h("button", { type: "button", "data-testid": "older", onclick: () => go(toBase64Url(next), false) }, "Older →"),
    );
  };

  const load = (state: ViewState) => {
    if (state.app === "") {
      fill(results, emptyNote("Type an app id in the App field above."));
      return;
    }
    const { start, end } = rangeSeconds(state, ctx.now());
    const offset = state.offset === "" ? undefined : fromBase64Url(state.offset);
    void task.run(
      "requests",
      (signal) =>
        ctx.api.read(
          {
            ...readFilters(state),
            ...(start !== undefined ? { startTime: BigInt(start) * 1_000_000n } : {}),
            ...(end !== undefined ? { endTime: BigInt(end) * 1_000_000n } : {}),
            ...(offset !== undefined ? { offset: create(LogOffsetSchema, { requestId: offset }) } : {}),
            count: BigInt(pageSize),
          },
          { signal },
        ),
      (answer) => {
        if (answer.log.length === 0) {
          fill(
            results,
            answer.offset
              ? emptyNote("Nothing matched in the part read so far (a Read stops after its scan budget); older requests may still match.")
              : state.regex || state.host || state.level !== undefined
                ? emptyNote("No requests match these filters in this range.")
                : emptyRangeNote(ctx, state, "No requests in this range."),
            pager(state, answer),
          );
          return "empty";
        }
        const open = (id: string) => ctx.update({ request: id }, "push");
        fill(results, requestTable(answer.log.map((log) => requestRow(log, toBase64Url(log.requestId) === state.request, open)), "request-list"), pager(state, answer));
        return "ready";
      },
    );
  };

  const state = ctx.state();
  form.sync(state);
  load(state);
  detail.show(state.request);
  return {
    update(next, previous) {
      form.sync(next);
      if (changed(next, previous, filterKeys)) newer = [];
      if (changed(next, previous, [...filterKeys, "offset"])) load(next);
      if (next.request !== previous.request) {
        detail.show(next.request);
        for (const row of results.querySelectorAll<HTMLElement>("tr.request")) row.classList.toggle("selected", row.dataset.key === next.request);
      }
    },
    dispose() {
      task.cancel();
    },
  };
};

import { type Choices, loadChoices } from "./choices.js";
import { h } from "./dom.js";
import { loadToken, saveToken } from "./token.js";
import type { ViewContext } from "./view-context.js";
import { formatIsoTime, type RangeName, rangePresets, type ViewName, type ViewState } from "./view-state.js";

const tabs: [ViewName, string][] = [
  ["overview", "Overview"],
  ["requests", "Requests"],
  ["explore", "Explore"],
  ["tail", "Live tail"],
  ["instances", "Instances"],
];

const rangeLabels: Record<RangeName, string> = {
  "6h": "Last 6 hours",
  "24h": "Last 24 hours",
  "7d": "Last 7 days",
  "30d": "Last 30 days",
  all: "Everything stored",
  custom: "Custom range (UTC)…",
};

/** Apps typed before, offered in the app field (this browser only: the API has no list of apps). */
const recentKey = "reqlog.apps";
function recentApps(): string[] {
  try {
    return JSON.parse(localStorage.getItem(recentKey) ?? "[]") as string[];
  } catch {
    return [];
  }
}
function rememberApp(app: string): void {
  try {
    localStorage.setItem(recentKey, JSON.stringify([app, ...recentApps().filter((a) => a !== app)].slice(0, 12)));
  } catch {
    // storage disabled
  }
}
export function lastApp(): string {
  return recentApps()[0] ?? "";
}

/** "2026-11-18T10:00" (a datetime-local value, read as UTC) ↔ seconds. */
const toLocalInput = (seconds: number | undefined) => (seconds === undefined ? "" : formatIsoTime(seconds).slice(0, 16));
const fromLocalInput = (value: string) => (value === "" ? undefined : Math.floor(Date.parse(`${value}:00Z`) / 1000));

function suggest(list: HTMLDataListElement, values: string[]): void {
  list.replaceChildren(...values.map((v) => h("option", { value: v })));
}

/** A text field with suggestions (a datalist): any value may be typed, as the API has no list to pick from. */
function pickerInput(id: string, placeholder: string, title: string) {
  const list = h("datalist", { id: `${id}-choices` });
  const input = h("input", { id, name: id, list: list.id, placeholder, title, autocomplete: "off", spellcheck: "false", size: 12 });
  return { input, list };
}

/**
 * The bar at the top: app, module, version and range pickers, the token
 * field and the view tabs. `sync` writes a state into the controls.
 */
export function createHeader(ctx: ViewContext, refresh: () => void) {
  const { input: app, list: recent } = pickerInput("app", "app id, e.g. forge", "The app_id your servers write");
  const { input: module, list: modules } = pickerInput("module", "all modules", "Module (empty: every module)");
  const { input: version, list: versions } = pickerInput("version", "all versions", "Version within the module (empty: every version)");
  const range = h("select", { id: "range", name: "range", title: "Time range" }, ...Object.entries(rangeLabels).map(([v, label]) => h("option", { value: v }, label)));
  const from = h("input", { type: "datetime-local", id: "from", title: "From (UTC)" });
  const to = h("input", { type: "datetime-local", id: "to", title: "To (UTC)" });
  const custom = h("span", { class: "custom-range" }, from, h("span", { class: "dim" }, "–"), to, h("span", { class: "dim" }, "UTC"));
  const token = h("input", { type: "password", id: "token", placeholder: "rql_…", autocomplete: "off", size: 28 });
  const prompt = h(
    "p",
    { class: "prompt", role: "alert", hidden: true },
    "This server needs an access token. Paste one made with reqlog token create --scope read:logs, then Use.",
  );
  const tokenPanel = h(
    "form",
    { class: "token-panel", hidden: true },
    prompt,
    h("label", { for: "token" }, "Access token"),
    token,
    h("button", { type: "submit" }, "Use"),
    h("button", { type: "button", onclick: () => setToken("") }, "Forget"),
    h("p", { class: "dim" }, "Kept in this tab's session storage and sent as Authorization: Bearer."),
  );
  const tokenButton = h("button", { type: "button", class: "token-button", onclick: () => (tokenPanel.hidden = !tokenPanel.hidden) });
  const nav = h("nav", { class: "tabs" });
  let choices: Choices = { modules: [], versionsOf: () => [] };
  let choicesOf = "";
  let choicesLoad: AbortController | undefined;
  /** Fetches everything again, the module and version choices too (a new token may see more). */
  const reload = () => {
    choicesOf = "\u0000";
    refresh();
  };

  const setToken = (value: string) => {
    saveToken(value);
    token.value = value;
    showTokenButton();
    tokenPanel.hidden = true;
    prompt.hidden = true;
    reload();
  };
  const showTokenButton = () => {
    tokenButton.textContent = loadToken() === "" ? "Token" : "Token ✓";
    tokenButton.title = loadToken() === "" ? "No access token set" : "An access token is set for this tab";
  };
  tokenPanel.addEventListener("submit", (event) => {
    event.preventDefault();
    setToken(token.value.trim());
  });
  token.value = loadToken();
  showTokenButton();

  const fresh = { offset: "", request: "" };
  app.addEventListener("change", () => {
    const value = app.value.trim();
    if (value !== "") rememberApp(value);
    ctx.update({ app: value, module: "", version: "", ...fresh }, "push");
  });
  module.addEventListener("change", () => ctx.update({ module: module.value.trim(), version: "", ...fresh }, "push"));
  version.addEventListener("change", () => ctx.update({ version: version.value.trim(), ...fresh }, "push"));
  range.addEventListener("change", () => {
    const name = range.value as RangeName;
    if (name !== "custom") return ctx.update({ range: name, from: undefined, to: undefined, ...fresh }, "push");
    // A custom range starts as the preset it replaces, to be edited.
    const end = Math.ceil(ctx.now() / 3_600_000) * 3600;
    const hours = rangePresets[ctx.state().range as keyof typeof rangePresets] ?? 24;
    ctx.update({ range: "custom", from: end - hours * 3600, to: end, ...fresh }, "push");
  });
  for (const input of [from, to]) {
    input.addEventListener("change", () => ctx.update({ from: fromLocalInput(from.value), to: fromLocalInput(to.value), ...fresh }, "push"));
  }

  const showChoices = (state: ViewState) => {
    suggest(modules, choices.modules);
    suggest(versions, state.module === "" ? [] : choices.versionsOf(state.module));
    version.disabled = state.module === "";
    version.placeholder = state.module === "" ? "needs a module" : "all versions";
    if (document.activeElement !== module) module.value = state.module;
    if (document.activeElement !== version) version.value = state.version;
  };

  const element = h(
    "header",
    { class: "top" },
    h(
      "div",
      { class: "bar" },
      h("a", { class: "brand", href: "/" }, "reqlog"),
      h("label", { class: "field" }, h("span", {}, "App"), app, recent),
      h("label", { class: "field" }, h("span", {}, "Module"), module, modules),
      h("label", { class: "field" }, h("span", {}, "Version"), version, versions),
      h("label", { class: "field" }, h("span", {}, "Range"), range),
      custom,
      h("span", { class: "spacer" }),
      h("button", { type: "button", onclick: reload, title: "Fetch everything again" }, "Refresh"),
      tokenButton,
    ),
    tokenPanel,
    nav,
  );

  return {
    element,
    openTokenPanel() {
      tokenPanel.hidden = false;
      prompt.hidden = false;
      token.focus();
    },
    sync(state: ViewState) {
      if (document.activeElement !== app) app.value = state.app;
      suggest(recent, recentApps());
      range.value = state.range;
      custom.hidden = state.range !== "custom";
      from.value = toLocalInput(state.from);
      to.value = toLocalInput(state.to);
      nav.replaceChildren(
        ...tabs.map(([view, label]) =>
          h(
            "a",
            {
              href: ctx.href({ view }),
              class: view === state.view ? "tab active" : "tab",
              "aria-current": view === state.view ? "page" : undefined,
              onclick: (event: Event) => {
                event.preventDefault();
                ctx.update({ view }, "push");
              },
            },
            label,
          ),
        ),
      );
      showChoices(state);
      if (state.app !== choicesOf) {
        choicesOf = state.app;
        choicesLoad?.abort();
        choices = { modules: [], versionsOf: () => [] };
        if (state.app === "") return;
        const controller = (choicesLoad = new AbortController());
        void loadChoices(ctx.api, state.app, controller.signal).then((found) => {
          if (controller.signal.aborted) return;
          choices = found;
          showChoices(ctx.state());
        });
      }
    },
  };
}

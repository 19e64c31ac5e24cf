import "./style.css";
import { createApi } from "./api.js";
import { h } from "./dom.js";
import { createHeader, lastApp } from "./header.js";
import { mountInstances } from "./instances.js";
import { mountExplore } from "./explore.js";
import { mountOverview } from "./overview.js";
import { mountSearch } from "./search.js";
import { mountTail } from "./tail.js";
import { loadToken } from "./token.js";
import type { MountedView, ViewContext, ViewMount } from "./view-context.js";
import { formatState, parseState, type ViewName, type ViewState } from "./view-state.js";

const mounts: Record<ViewName, ViewMount> = {
  overview: mountOverview,
  requests: mountSearch,
  explore: mountExplore,
  tail: mountTail,
  instances: mountInstances,
};

/**
 * The dashboard: the URL is the state. Every change goes through `update`,
 * which writes the URL (a history entry when asked) and tells the view what
 * changed; Back and Forward replay the URL.
 */
function start(container: HTMLElement): void {
  let state: ViewState = parseState(window.location.search);
  if (state.app === "" && lastApp() !== "") {
    state = { ...state, app: lastApp() };
    history.replaceState(null, "", formatState(state) || "/");
  }
  const ctx: ViewContext = {
    api: createApi(loadToken),
    state: () => state,
    update(patch, how = "replace") {
      const next = { ...state, ...patch };
      const url = formatState(next) || "/";
      if (how === "push") history.pushState(null, "", url);
      else history.replaceState(null, "", url);
      apply(next);
    },
    href: (patch) => formatState({ ...state, ...patch }) || "/",
    now: () => Date.now(),
    askForToken: () => header.openTokenPanel(),
  };
  const main = h("main", { class: "view" });
  let view: MountedView | undefined;
  const mount = () => {
    view?.dispose();
    main.replaceChildren();
    main.dataset.view = state.view;
    view = mounts[state.view](main, ctx);
  };
  const show = () => {
    document.title = state.app === "" ? "reqlog" : `${state.app} · reqlog`;
    header.sync(state);
  };
  const apply = (next: ViewState) => {
    const previous = state;
    state = next;
    show();
    if (next.view !== previous.view) mount();
    else view?.update(next, previous);
  };
  const header = createHeader(ctx, () => {
    header.sync(state);
    mount();
  });
  container.replaceChildren(header.element, main);
  window.addEventListener("popstate", () => apply(parseState(window.location.search)));
  show();
  mount();
}

start(document.getElementById("app")!);

import { emptyNote, fill, h } from "./dom.js";
import { formatAge, formatTimeMicros } from "./format.js";
import { changed, panelTask, type ViewMount } from "./view-context.js";
import type { ViewState } from "./view-state.js";

/** Instance statuses (ListStatus): what each instance of the app last said with SetStatus. */
export const mountInstances: ViewMount = (root, ctx) => {
  const panel = h("section", { class: "card", "data-testid": "instances" });
  root.append(panel);
  const task = panelTask(panel, ctx);
  const load = (state: ViewState) => {
    if (state.app === "") {
      fill(panel, emptyNote("Type an app id in the App field above."));
      return;
    }
    void task.run(
      "instance statuses",
      (signal) =>
        ctx.api.listStatus(
          { appId: state.app, ...(state.module ? { moduleId: state.module } : {}), ...(state.version ? { versionId: state.version } : {}) },
          { signal },
        ),
      (answer) => {
        const head = h("div", { class: "card-head" }, h("h2", {}, "Instance statuses"), h("span", { class: "dim" }, `${answer.status.length} set with SetStatus`));
        if (answer.status.length === 0) {
          fill(panel, head, emptyNote("No instance of this selection has set a status (SetStatus)."));
          return "empty";
        }
        const now = ctx.now();
        fill(
          panel,
          head,
          h(
            "table",
            { class: "grid" },
            h("thead", {}, h("tr", {}, ...["Module", "Version", "Instance", "Status", "Set (UTC)", ""].map((c) => h("th", {}, c)))),
            h("tbody", {}, ...answer.status.map((s) =>
              h(
                "tr",
                {},
                h("td", {}, s.moduleId),
                h("td", {}, s.versionId),
                h("td", {}, s.instanceId === "" ? h("span", { class: "dim" }, "(the version)") : s.instanceId),
                h("td", { class: "status-text" }, s.status),
                h("td", { class: "time" }, formatTimeMicros(s.time)),
                h("td", { class: "dim" }, formatAge(s.time, now)),
              ),
            )),
          ),
        );
        return "ready";
      },
    );
  };
  load(ctx.state());
  return {
    update(next, previous) {
      if (changed(next, previous, ["app", "module", "version"])) load(next);
    },
    dispose() {
      task.cancel();
    },
  };
};

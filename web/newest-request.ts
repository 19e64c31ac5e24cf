import { emptyNote, h } from "./dom.js";
import { formatTimeMicros } from "./format.js";
import type { ViewContext } from "./view-context.js";
import type { ViewState } from "./view-state.js";

/**
 * The note of a range that holds no request, with where the app's newest request is and a link to a range that
 * shows it: the default range is the last 24 hours, and a store of older data (an import, a copied database)
 * would otherwise look empty with no hint that anything is there.
 */
export function emptyRangeNote(ctx: ViewContext, state: ViewState, text: string): HTMLElement {
  const note = emptyNote(text);
  note.dataset.testid = "empty-range";
  ctx.api.read({ appId: state.app, count: 1n, includeIncomplete: true }).then(
    (answer) => {
      const newest = answer.log[0];
      if (newest === undefined) {
        note.append(` Nothing is stored for app “${state.app}”: check the app id.`);
        return;
      }
      const at = newest.endTime > 0n ? newest.endTime : newest.startTime;
      note.append(
        ` The newest request of “${state.app}” is from ${formatTimeMicros(at)} UTC: `,
        h("a", { href: ctx.href({ range: "all", offset: "", request: "" }), "data-testid": "show-all" }, "show everything stored"),
        ".",
      );
    },
    // The note stands as it is: the range's own call already showed any problem with the server.
    () => {},
  );
  return note;
}

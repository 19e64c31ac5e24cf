import { type Api, Code, describeError, isCancel } from "./api.js";
import { fill, loadingNote, type PanelState, problemNote, setState } from "./dom.js";
import type { ViewState } from "./view-state.js";

/** What every view gets from the page: the API, the state (the URL), and a way to change it. */
export interface ViewContext {
  api: Api;
  state(): ViewState;
  /** Changes the view: "push" makes a browser history entry (Back returns), "replace" does not. */
  update(patch: Partial<ViewState>, how?: "push" | "replace"): void;
  /** The link to the view with a change (for real <a href>s: open in a new tab, copy). */
  href(patch: Partial<ViewState>): string;
  /** Milliseconds since the epoch. */
  now(): number;
  /** Opens the token field (after an authentication failure). */
  askForToken(): void;
}

export interface MountedView {
  /** The state changed: refetch what depends on what changed. */
  update(state: ViewState, previous: ViewState): void;
  dispose(): void;
}

export type ViewMount = (root: HTMLElement, ctx: ViewContext) => MountedView;

/** Whether any of these fields differ. */
export function changed(a: ViewState, b: ViewState, keys: readonly (keyof ViewState)[]): boolean {
  return keys.some((k) => a[k] !== b[k]);
}

/** The fields that choose what is counted: app, module, version and range. */
export const selectionKeys = ["app", "module", "version", "range", "from", "to"] as const satisfies readonly (keyof ViewState)[];

/**
 * One panel's fetch at a time, with its states: loading while it runs, then
 * what `show` makes of the answer (ready or empty), or the call's error as
 * the server worded it. A new run, or `cancel`, aborts the one before.
 */
export function panelTask(panel: HTMLElement, ctx: ViewContext) {
  let controller: AbortController | undefined;
  return {
    async run<T>(what: string, load: (signal: AbortSignal) => Promise<T>, show: (data: T) => PanelState): Promise<T | undefined> {
      controller?.abort();
      const mine = (controller = new AbortController());
      setState(panel, "loading");
      fill(panel, loadingNote(what));
      try {
        const data = await load(mine.signal);
        if (mine.signal.aborted) return undefined;
        setState(panel, show(data));
        return data;
      } catch (err) {
        if (mine.signal.aborted || isCancel(err)) return undefined;
        showProblem(panel, ctx, err, `Cannot load ${what}`);
        return undefined;
      }
    },
    cancel() {
      controller?.abort();
    },
  };
}

/** Shows a failed call in a panel (and asks for a token when that is what is missing). */
export function showProblem(panel: HTMLElement, ctx: ViewContext, err: unknown, context: string): void {
  const problem = describeError(err);
  fill(panel, problemNote(problem, context));
  setState(panel, "error");
  if (problem.code === Code.Unauthenticated) ctx.askForToken();
}

import { Code, type CallProblem } from "./api.js";

/** What `h` takes as children: text is always text (never parsed as HTML), nested arrays are flattened. */
export type Child = Node | string | number | null | undefined | false | Child[];
type Props = Record<string, string | number | boolean | undefined | ((event: Event) => void)>;

/**
 * Makes an element: `h("td", { class: "num" }, "42")`. Props named on* are
 * listeners, `true` sets an attribute present, `false`/undefined leave it out.
 */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (typeof value === "function") element.addEventListener(name.slice(2), value);
    else if (value === true) element.setAttribute(name, "");
    else if (value !== false && value !== undefined) element.setAttribute(name, String(value));
  }
  element.append(...flatten(children));
  return element;
}

function flatten(children: Child[]): (Node | string)[] {
  return children.flatMap((c): (Node | string)[] => {
    if (Array.isArray(c)) return flatten(c);
    if (c === null || c === undefined || c === false) return [];
    return [typeof c === "number" ? String(c) : c];
  });
}

/** Replaces an element's children. */
export function fill(element: Element, ...children: Child[]): void {
  element.replaceChildren(...flatten(children));
}

/**
 * A panel's state, also written to `data-state` (loading, ready, empty,
 * error) so tests and styles can tell them apart.
 */
export type PanelState = "loading" | "ready" | "empty" | "error";

export function setState(element: HTMLElement, state: PanelState): void {
  element.dataset.state = state;
  element.setAttribute("aria-busy", String(state === "loading"));
}

export function loadingNote(what: string): HTMLElement {
  return h("p", { class: "note loading" }, `Loading ${what}…`);
}

export function emptyNote(text: string): HTMLElement {
  return h("p", { class: "note empty" }, text);
}

/**
 * The server's message as it sent it (an invalid regex shows RE2's words), and what to do about a refused
 * token. A missing token is no error of the panel's: every panel fails alike, so each says so calmly and the
 * one prompt is the token panel's (header.ts), not a red box per panel.
 */
export function problemNote(problem: CallProblem, context: string): HTMLElement {
  if (problem.code === Code.Unauthenticated) {
    return h("p", { class: "note hint" }, "This view needs an access token: paste one in the Token panel above.");
  }
  const hint =
    problem.code === Code.PermissionDenied
      ? "The token does not give access to this: ask for a token with the read:logs scope for this app."
      : undefined;
  return h(
    "div",
    { class: "problem", role: "alert" },
    h("strong", {}, `${context}: `),
    h("span", { class: "code" }, problem.codeName),
    " ",
    h("span", { class: "message" }, problem.message),
    hint && h("p", { class: "hint" }, hint),
  );
}

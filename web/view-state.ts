/**
 * What the dashboard shows, kept whole in the URL's query string so that a
 * view can be bookmarked and shared. Plain data, no DOM: the tests parse and
 * write it too.
 */
const views = ["overview", "requests", "explore", "tail", "instances"] as const;
export type ViewName = (typeof views)[number];

/** Ranges ending now, in hours; "all" is everything stored, "custom" is `from`..`to`. */
export const rangePresets = { "6h": 6, "24h": 24, "7d": 168, "30d": 720 } as const;
export type RangeName = keyof typeof rangePresets | "all" | "custom";

export interface ViewState {
  view: ViewName;
  /** "" until one is chosen. */
  app: string;
  /** "" = every module. */
  module: string;
  /** "" = every version (of the module). */
  version: string;
  range: RangeName;
  /** Seconds since the epoch, for a custom range. */
  from?: number;
  to?: number;
  /** Request search: Read's combined_log_regex and host_regex ("" = none). */
  regex: string;
  host: string;
  /** Minimum app line level (0 DEBUG … 4 CRITICAL); undefined = requests with any lines or none. */
  level?: number;
  incomplete: boolean;
  /** The Read offset of the page shown (base64 of LogOffset.request_id); "" = the first page. */
  offset: string;
  /** The request whose detail is open (base64url of its id); "" = none. */
  request: string;
  /** The top-routes table's order. */
  routesBy: "requests" | "p99";
  /** Explore's query (docs/query.md); "" = none yet. */
  q: string;
}

export const defaultState: ViewState = {
  view: "overview",
  app: "",
  module: "",
  version: "",
  range: "24h",
  regex: "",
  host: "",
  incomplete: false,
  offset: "",
  request: "",
  routesBy: "requests",
  q: "",
};

const rangeNames: readonly string[] = [...Object.keys(rangePresets), "all", "custom"];

/** An ISO-8601 time ("2026-11-18T10:00Z") or seconds → seconds since the epoch. */
function parseTime(text: string | null): number | undefined {
  if (text === null || text === "") return undefined;
  const ms = /^\d+$/.test(text) ? Number(text) * 1000 : Date.parse(text);
  return Number.isFinite(ms) ? Math.floor(ms / 1000) : undefined;
}

/** Seconds → "2026-11-18T10:00:00Z" (readable in a shared link). */
export function formatIsoTime(seconds: number): string {
  return new Date(seconds * 1000).toISOString().replace(".000Z", "Z");
}

export function parseState(query: string): ViewState {
  const q = new URLSearchParams(query);
  const text = (key: string) => q.get(key) ?? "";
  const view = views.find((v) => v === q.get("view")) ?? defaultState.view;
  const from = parseTime(q.get("from"));
  const to = parseTime(q.get("to"));
  const rangeParam = q.get("range");
  const range: RangeName =
    rangeParam !== null && rangeNames.includes(rangeParam)
      ? (rangeParam as RangeName)
      : from !== undefined || to !== undefined
        ? "custom"
        : defaultState.range;
  const level = Number(q.get("level") ?? NaN);
  return {
    view,
    app: text("app"),
    module: text("module"),
    version: text("version"),
    range,
    ...(range === "custom" ? { from, to } : {}),
    regex: text("regex"),
    host: text("host"),
    ...(Number.isInteger(level) && level >= 0 && level <= 4 ? { level } : {}),
    incomplete: q.get("incomplete") === "1",
    offset: text("offset"),
    request: text("request"),
    routesBy: q.get("routes") === "p99" ? "p99" : "requests",
    q: text("q"),
  };
}

/** The query string of a state: only what differs from the defaults, in a stable order. */
export function formatState(state: ViewState): string {
  const q = new URLSearchParams();
  const put = (key: string, value: string | undefined, unless = "") => {
    if (value !== undefined && value !== unless) q.set(key, value);
  };
  put("view", state.view, defaultState.view);
  put("app", state.app);
  put("module", state.module);
  put("version", state.version);
  put("range", state.range, defaultState.range);
  if (state.range === "custom") {
    put("from", state.from === undefined ? undefined : formatIsoTime(state.from));
    put("to", state.to === undefined ? undefined : formatIsoTime(state.to));
  }
  put("regex", state.regex);
  put("host", state.host);
  put("level", state.level?.toString());
  put("incomplete", state.incomplete ? "1" : undefined);
  put("offset", state.offset);
  put("request", state.request);
  put("routes", state.routesBy, defaultState.routesBy);
  put("q", state.q);
  // Characters a query may hold as they are stay readable in a shared link (times, paths, regexes).
  const text = q.toString().replace(/%(3A|2F|2C|40|21|24|27|28|29|2A|3B)/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  return text === "" ? "" : `?${text}`;
}

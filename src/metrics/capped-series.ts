import { labelText } from "./metric-text.js";

/** The route label's value of the series a request counts under once its app has no room for a series of its own. */
export const overflowRoute = "other";

export interface CappedSeriesOptions<S> {
  /** The family's label names, in the order `find` takes their values; the first is the app's. */
  labelNames: readonly string[];
  /** Which label is the route (the one an overflowing series gives up); -1: none, then nothing overflows. */
  routeLabel: number;
  /** Most series of one app with a route of their own. */
  maxSeriesPerApp: number;
  /** A new series, with its labels as the text format writes them. */
  make(labels: string): S;
  /** Told of each request counted under `http_route="other"` for want of room. */
  overflowed(app: string): void;
}

export interface CappedSeries<S> {
  /**
   * The series of these label values (the app's first), made on first use:
   * past the app's cap, a new combination counts in the series of the same
   * labels with the route "other".
   */
  find(values: string[]): S;
  /** Every series, app by app. */
  all(): IterableIterator<S>;
  /** Series of an app with a route of their own. */
  ownSeries(app: string): number;
  /** The apps with series. */
  apps(): IterableIterator<string>;
}

interface AppSeries<S> {
  series: Map<string, S>;
  own: number;
}

/**
 * The series of a metric family, grouped by app, with a bound on each app's
 * series: the route is the label whose values a forge's traffic can make
 * without end (a scanner's random paths collapse to few templates, but an
 * app that logs raw paths as url_map_entry would not), so an app's first
 * `maxSeriesPerApp` combinations get series of their own and later ones
 * share `http_route="other"` with their other labels kept. Those labels
 * (module, version, known methods, status codes, levels) grow with what
 * the app deploys and answers, not with what its clients send.
 */
export function createCappedSeries<S>(options: CappedSeriesOptions<S>): CappedSeries<S> {
  const { labelNames, routeLabel, maxSeriesPerApp } = options;
  const byApp = new Map<string, AppSeries<S>>();
  // A key no real route makes: "other" as a url_map_entry keeps its own series.
  const overflowKey = "\u0000other";

  return {
    find(values) {
      const app = values[0]!;
      let group = byApp.get(app);
      if (group === undefined) byApp.set(app, (group = { series: new Map(), own: 0 }));
      const key = values.join("\u0001");
      const found = group.series.get(key);
      if (found !== undefined) return found;
      if (routeLabel < 0 || group.own < maxSeriesPerApp) {
        const made = options.make(labelText(labelNames, values));
        group.series.set(key, made);
        group.own++;
        return made;
      }
      options.overflowed(app);
      const route = values[routeLabel]!;
      values[routeLabel] = overflowKey;
      const shared = values.join("\u0001");
      let series = group.series.get(shared);
      if (series === undefined) {
        values[routeLabel] = overflowRoute;
        group.series.set(shared, (series = options.make(labelText(labelNames, values))));
      }
      values[routeLabel] = route;
      return series;
    },
    *all() {
      for (const group of byApp.values()) yield* group.series.values();
    },
    ownSeries: (app) => byApp.get(app)?.own ?? 0,
    apps: () => byApp.keys(),
  };
}

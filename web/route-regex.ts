/**
 * A Read regex for the requests of a route that is a path with `{name}`
 * placeholders (Stats' collapsed paths, `/teams/{id}`, or a router's
 * url_map_entry, `/repos/{owner}/{repo}`): the request line of the combined
 * log, `"GET /teams/123?query HTTP/1.1"`, or `"GET /teams/123"` when the record
 * has no HTTP version. Undefined for other routes, which the combined line
 * does not hold.
 */
export function routeRegex(route: string): string | undefined {
  if (!route.startsWith("/")) return undefined;
  const escaped = route.replace(/[\\^$.*+?()[\]{}|]/g, "\\$&").replace(/\\\{\w+\\\}/g, '[^/?" ]+');
  return `"[A-Z]+ ${escaped}[?" ]`;
}

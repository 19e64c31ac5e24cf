import { forgeRouteTable, pathOf, type RouteTable } from "./route-table.js";

/** A path segment that is an id: a number, a hex id of 7+ characters with a digit (a commit), or a UUID. */
const idSegment =
  /^(?:\d+|(?=[0-9a-f]*\d)[0-9a-f]{7,}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;

/**
 * The path of a request with its ids written `{id}`: the query string and
 * fragment dropped, an absolute URL reduced to its path, then each segment
 * that is all digits, a hex id of at least 7 characters with a digit in it
 * (a commit sha; a word such as "facade" is not one), or a UUID replaced.
 * Names (users, repositories, branches) stay as they are.
 */
export function collapsePath(resource: string): string {
  return pathOf(resource)
    .split("/")
    .map((segment) => (idSegment.test(segment) ? "{id}" : segment))
    .join("/");
}

/**
 * The route a request counts under in Stats: its url_map_entry when the
 * writer set one (a handler's pattern), else the template the route table
 * (the forge's routes by default) gives its path, else its path with ids
 * collapsed.
 */
export function routeOf(request: { urlMapEntry: string; resource: string }, routes: RouteTable = forgeRouteTable): string {
  if (request.urlMapEntry !== "") return request.urlMapEntry;
  const { resource } = request;
  if (routes !== forgeRouteTable || resource.length > longestKept) return routeByTable(resource, routes);
  let route = forgeRoutes.get(resource);
  if (route === undefined) {
    if (forgeRoutes.size >= routesKept) forgeRoutes.clear();
    route = routeByTable(resource, routes);
    forgeRoutes.set(resource, route);
  }
  return route;
}

const routeByTable = (resource: string, routes: RouteTable) => routes.match(resource) ?? collapsePath(resource);

/**
 * The forge table's routes of resources met lately: the writers' Stats
 * facts take a route for every finished request, and a batch's resources
 * repeat (the same pages and API paths), so each is matched once. At most
 * routesKept, none longer than longestKept: ids in paths make them unbounded.
 */
const forgeRoutes = new Map<string, string>();
const routesKept = 4096;
const longestKept = 512;

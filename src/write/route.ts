/** A path segment that is an id: a number, a hex id of 7+ characters with a digit (a commit), or a UUID. */
const idSegment =
  /^(?:\d+|(?=[0-9a-f]*\d)[0-9a-f]{7,}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;
/** The scheme and authority of an absolute URL (a proxy's request line). */
const schemeAndHost = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i;

/**
 * The path of a request with its ids written `{id}`: the query string and
 * fragment dropped, an absolute URL reduced to its path, then each segment
 * that is all digits, a hex id of at least 7 characters with a digit in it
 * (a commit sha; a word such as "facade" is not one), or a UUID replaced.
 * Names (users, repositories, branches) stay as they are.
 */
export function collapsePath(resource: string): string {
  const full = resource.replace(/[?#].*$/s, "");
  const path = full.replace(schemeAndHost, "");
  if (path === "") return "/";
  return path
    .split("/")
    .map((segment) => (idSegment.test(segment) ? "{id}" : segment))
    .join("/");
}

/**
 * The route a request counts under in Stats: its url_map_entry when the
 * writer set one (a handler's pattern), else its path with ids collapsed.
 */
export function routeOf(request: { urlMapEntry: string; resource: string }): string {
  return request.urlMapEntry !== "" ? request.urlMapEntry : collapsePath(request.resource);
}

const param = /^:([A-Za-z_][A-Za-z0-9_]*)(?:\(.*\))?\??$/;
const wildcard = /^\*([A-Za-z_][A-Za-z0-9_]*)?$/;

/**
 * A framework's route pattern written as a route-table template, so that
 * url_map_entry reads the same whatever served the request:
 * Express/Fastify `/teams/:id` → `/teams/{id}`, `:id(\\d+)` and `:id?` →
 * `{id}`, a wildcard `*` (Fastify) or `*path` (Express 5) → `{path*}`.
 * Other segments stay as written.
 */
export function routeTemplate(pattern: string): string {
  if (!pattern.includes(":") && !pattern.includes("*")) return pattern;
  return pattern
    .split("/")
    .map((segment) => {
      const p = param.exec(segment);
      if (p) return `{${p[1]}}`;
      const w = wildcard.exec(segment);
      if (w) return `{${w[1] ?? "path"}*}`;
      return segment;
    })
    .join("/");
}

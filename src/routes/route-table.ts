import { readFileSync } from "node:fs";
import { forgeRouteTemplates } from "./forge-routes.js";

/**
 * A table of route templates ("/api/v1/teams/{id}") that names the template a
 * request path belongs to: what the SDK's middleware logs as url_map_entry
 * when the framework has no matched route, what the access-log importer
 * logs, and what Stats groups by when a request carries no url_map_entry.
 *
 * A template is a path of literal segments and parameters: `{name}` matches
 * one non-empty segment, `{name*}` (only last) matches the rest of the path,
 * one segment or more. When two templates match, the one whose first
 * differing segment is literal wins (`/admin/hooks/new` over
 * `/admin/hooks/{id}`), then a one-segment parameter over a rest parameter.
 * Templates added later (a routes file) are tried before the built-in ones
 * when both would match the same way.
 */
export interface RouteTable {
  /** The template of a request's resource (its query, fragment, scheme and host ignored), or undefined. */
  match(resource: string): string | undefined;
  /** The templates in the table, in the order they were added. */
  readonly templates: readonly string[];
}

interface Node {
  literal: Map<string, Node>;
  param?: Node;
  /** The template ending here (on a literal or one-segment parameter path). */
  template?: string;
  /** A template whose `{name*}` starts here. */
  rest?: string;
}

const newNode = (): Node => ({ literal: new Map() });

/** The scheme and authority of an absolute URL (a proxy's request line). */
const schemeAndHost = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i;

/** A resource's path: query and fragment dropped, an absolute URL reduced to its path, "" as "/". */
export function pathOf(resource: string): string {
  const path = resource.replace(/[?#].*$/s, "").replace(schemeAndHost, "");
  return path === "" ? "/" : path;
}

const paramSegment = /^\{[A-Za-z_][A-Za-z0-9_]*\}$/;
const restSegment = /^\{[A-Za-z_][A-Za-z0-9_]*\*\}$/;

/** Why a template is not one (undefined when it is). */
function templateProblem(template: string): string | undefined {
  if (!template.startsWith("/")) return "it does not start with /";
  if (/[?#\s]/.test(template)) return "it holds a query, fragment or space";
  const segments = template.split("/").slice(1);
  for (const [i, segment] of segments.entries()) {
    if (segment.includes("{") || segment.includes("}")) {
      if (restSegment.test(segment)) {
        if (i !== segments.length - 1) return `its rest parameter ${segment} is not its last segment`;
      } else if (!paramSegment.test(segment)) {
        return `its segment "${segment}" is neither literal nor a whole {name} parameter`;
      }
    }
  }
  return undefined;
}

/** A route table over these templates, the later ones tried first on equal matches. */
export function createRouteTable(templates: readonly string[]): RouteTable {
  const root = newNode();
  for (const template of templates) {
    const problem = templateProblem(template);
    if (problem) throw new Error(`route template "${template}": ${problem}`);
    let node = root;
    const segments = template.split("/").slice(1);
    let rest = false;
    for (const segment of segments) {
      if (restSegment.test(segment)) {
        node.rest = template;
        rest = true;
        break;
      }
      const next = paramSegment.test(segment)
        ? (node.param ??= newNode())
        : (node.literal.get(segment) ?? node.literal.set(segment, newNode()).get(segment)!);
      node = next;
    }
    if (!rest) node.template = template;
  }

  const walk = (node: Node, segments: string[], i: number): string | undefined => {
    if (i === segments.length) return node.template;
    const segment = segments[i]!;
    const literal = node.literal.get(segment);
    const byLiteral = literal && walk(literal, segments, i + 1);
    if (byLiteral) return byLiteral;
    const byParam = segment !== "" && node.param ? walk(node.param, segments, i + 1) : undefined;
    if (byParam) return byParam;
    return node.rest !== undefined && segments.slice(i).some((s) => s !== "") ? node.rest : undefined;
  };

  return {
    templates,
    match(resource) {
      return walk(root, pathOf(resource).split("/").slice(1), 0);
    },
  };
}

/** The forge's API routes (seeds/forge-http-api.md), built in. */
export const forgeRouteTable: RouteTable = createRouteTable(forgeRouteTemplates);

/**
 * A routes file: one template per line, `#` comments and blank lines
 * ignored. Its templates are added to the built-in forge table and win over
 * it; a line `!replace-builtin` (before any template) starts from an empty
 * table instead. A bad template fails with its file and line number.
 */
export function loadRouteTable(path: string, builtIn: readonly string[] = forgeRouteTemplates): RouteTable {
  const text = readFileSync(path, "utf8");
  let base: readonly string[] = builtIn;
  const added: string[] = [];
  for (const [index, raw] of text.split(/\r?\n/).entries()) {
    const line = raw.replace(/#.*$/, "").trim();
    if (line === "") continue;
    if (line === "!replace-builtin") {
      if (added.length > 0) throw new Error(`${path}:${index + 1}: !replace-builtin must come before any template`);
      base = [];
      continue;
    }
    const problem = templateProblem(line);
    if (problem) throw new Error(`${path}:${index + 1}: route template "${line}": ${problem}`);
    added.push(line);
  }
  return createRouteTable([...base, ...added]);
}

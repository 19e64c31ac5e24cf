/**
 * An access-log format in nginx's `log_format` syntax, compiled into a line
 * parser: literal text and `$variables` (or `${variables}`), e.g.
 * `$remote_addr - $remote_user [$time_local] "$request" $status ...`.
 *
 * A variable nginx writes in a fixed shape ($status, $time_local, sizes,
 * times) matches only that shape; any other variable matches as little text
 * as lets the rest of the line match. That keeps quoted fields right when a
 * writer did not escape a quote inside them (the forge writes the user agent
 * as sent), since the fields after them must still match.
 */
export interface LogFormat {
  /** The format text, as compiled. */
  readonly source: string;
  /** The variables, in order of appearance (each once). */
  readonly variables: readonly string[];
  /** The unescaped value of each variable of a line, or undefined when the line does not have this format. */
  match(line: string): Record<string, string> | undefined;
  /** Why a line does not have this format: the first part that does not match, and where. */
  explain(line: string): string;
}

/** How the writer escaped values: nginx's default (`\xHH`; Apache's `\"` too), `escape=json`, or `escape=none`. */
export type Escape = "default" | "json" | "none";

type Element = { literal: string } | { variable: string };

/** nginx's list of figures, one per upstream tried: "0.004, 0.002 : 0.001" (", " between servers, " : " between groups). */
const upstreamList = (item: string) => `(?:${item})(?:(?:, | : )(?:${item}))*`;
const seconds = "\\d+(?:\\.\\d+)?|-";
const word = "\\S+";

/**
 * The shapes of the variables nginx writes in a fixed form, with what each
 * is in words (for `explain`). Shaping the space-free ones matters: an
 * unshaped variable before them would otherwise take what is theirs.
 */
const shapes: Record<string, [pattern: string, name: string]> = {
  status: ["\\d{3}", "a 3-digit status"],
  body_bytes_sent: ["\\d+|-", "a byte count or -"],
  bytes_sent: ["\\d+|-", "a byte count or -"],
  request_length: ["\\d+|-", "a byte count or -"],
  request_time: [seconds, "seconds or -"],
  msec: ["\\d+(?:\\.\\d+)?", "seconds since the epoch"],
  time_local: ["\\d{2}/[A-Za-z]{3}/\\d{4}:\\d{2}:\\d{2}:\\d{2} [+-]\\d{4}", "a time such as 18/Nov/2026:11:06:40 +0000"],
  time_iso8601: ["\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(?:\\.\\d+)?(?:Z|[+-]\\d{2}:?\\d{2})", "an ISO 8601 time"],
  upstream_response_time: [upstreamList(seconds), "upstream seconds (0.004, 0.002 : 0.001) or -"],
  upstream_connect_time: [upstreamList(seconds), "upstream seconds or -"],
  upstream_header_time: [upstreamList(seconds), "upstream seconds or -"],
  upstream_status: [upstreamList("\\d{3}|-"), "upstream statuses or -"],
  upstream_addr: [upstreamList("[^\\s,]+"), "upstream addresses"],
  remote_addr: [word, "an address"],
  remote_port: [word, "a port"],
  server_addr: [word, "an address"],
  server_port: [word, "a port"],
  host: [word, "a host name"],
  server_name: [word, "a host name"],
  scheme: [word, "a scheme"],
  request_id: [word, "a request id"],
  connection: [word, "a connection number"],
  connection_requests: [word, "a count"],
  pipe: [word, "p or ."],
};

const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

/**
 * The format text of a `log_format` as nginx.conf spells it, reduced to the
 * format itself: `log_format main escape=json '...' '...';` or just the
 * quoted pieces become their concatenation; unquoted text is taken as is.
 */
export function formatText(spec: string): { text: string; escape: Escape } {
  let rest = spec.trim().replace(/;\s*$/, "");
  let escape: Escape = "default";
  const directive = /^log_format\s+\S+\s+/.exec(rest);
  if (directive) rest = rest.slice(directive[0].length);
  const escapeOption = /^escape=(default|json|none)\s+/.exec(rest);
  if (escapeOption) {
    escape = escapeOption[1] as Escape;
    rest = rest.slice(escapeOption[0].length);
  }
  if (!/^['"]/.test(rest)) return { text: rest, escape };
  let text = "";
  const piece = /\s*(['"])((?:\\.|(?!\1)[^\\])*)\1/y;
  let at = 0;
  while (at < rest.length) {
    piece.lastIndex = at;
    const m = piece.exec(rest);
    if (!m) throw new Error(`log format: cannot read the quoted pieces of ${JSON.stringify(spec)} at column ${at + 1}`);
    text += m[2]!.replace(/\\(['"\\])/g, "$1");
    at = piece.lastIndex;
    if (/^\s*$/.test(rest.slice(at))) break;
  }
  return { text, escape };
}

function elementsOf(text: string): Element[] {
  const elements: Element[] = [];
  const variable = /\$(?:\{([A-Za-z0-9_]+)\}|([A-Za-z0-9_]+))/g;
  let at = 0;
  for (const m of text.matchAll(variable)) {
    if (m.index > at) elements.push({ literal: text.slice(at, m.index) });
    elements.push({ variable: m[1] ?? m[2]! });
    at = m.index + m[0].length;
  }
  if (at < text.length) elements.push({ literal: text.slice(at) });
  return elements;
}

const hexEscape = /\\x([0-9A-Fa-f]{2})/;
const controlEscapes: Record<string, number> = { n: 10, r: 13, t: 9, b: 8, v: 11, '"': 34, "\\": 92 };

/**
 * A value as written with nginx's default escaping (`\xHH` for `"`, `\`,
 * control characters and bytes above 0x7E) or Apache httpd's (`\"`, `\\`,
 * `\n`, `\t`, `\xHH`): the bytes restored, then read as UTF-8.
 */
function unescapeDefault(value: string): string {
  if (!value.includes("\\")) return value;
  const bytes: number[] = [];
  const text = Buffer.from(value, "utf8");
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === 0x5c && i + 1 < text.length) {
      const next = String.fromCharCode(text[i + 1]!);
      if (next === "x" && hexEscape.test(text.toString("latin1", i, i + 4))) {
        bytes.push(parseInt(text.toString("latin1", i + 2, i + 4), 16));
        i += 3;
        continue;
      }
      const control = controlEscapes[next];
      if (control !== undefined) {
        bytes.push(control);
        i += 1;
        continue;
      }
    }
    bytes.push(c);
  }
  return Buffer.from(bytes).toString("utf8");
}

function unescapeJson(value: string): string {
  if (!value.includes("\\")) return value;
  try {
    return JSON.parse(`"${value}"`) as string;
  } catch {
    return value;
  }
}

const unescapers: Record<Escape, (value: string) => string> = {
  default: unescapeDefault,
  json: unescapeJson,
  none: (value) => value,
};

/** What a variable of no fixed shape matches: escaped text (no bare quote or backslash), or any text. */
const freeValue = { escaped: '((?:[^"\\\\]|\\\\.)*?)', lenient: "(.*?)" };

/** The line regex of a format, with `free` for the variables of no fixed shape. */
function patternOf(elements: Element[], free: string): RegExp {
  let pattern = "^";
  for (const element of elements) {
    if ("literal" in element) pattern += escapeRegex(element.literal);
    else pattern += shapes[element.variable] !== undefined ? `(${shapes[element.variable]![0]})` : free;
  }
  return new RegExp(`${pattern}$`, "s");
}

/** Compiles a format (nginx `log_format` text, or the directive as nginx.conf has it). */
export function compileLogFormat(spec: string, escape?: Escape): LogFormat {
  const parsed = formatText(spec);
  const text = parsed.text;
  const escaped = escape ?? parsed.escape;
  const unescape = unescapers[escaped];
  const elements = elementsOf(text);
  const variables: string[] = [];
  for (const element of elements) if ("variable" in element) variables.push(element.variable);
  if (variables.length === 0) throw new Error(`log format ${JSON.stringify(text)} has no $variables`);
  if (new Set(variables).size !== variables.length) {
    throw new Error(`log format ${JSON.stringify(text)} names a variable twice`);
  }
  // A line whose values were escaped as the format says is read as such first:
  // in `"\" " "-"` the referrer is `" ` and the user agent "-", not `\` and
  // ` "-`. Lines with an unescaped quote in a value (the forge writes the user
  // agent as sent) fall back to the least text.
  const regexes = [freeValue.lenient];
  if (escaped !== "none") regexes.unshift(freeValue.escaped);
  const compiled = regexes.map((free) => patternOf(elements, free));

  return {
    source: text,
    variables,
    match(line) {
      let m: RegExpExecArray | null = null;
      for (let i = 0; i < compiled.length && m === null; i++) m = compiled[i]!.exec(line);
      if (!m) return undefined;
      const values: Record<string, string> = {};
      for (let i = 0; i < variables.length; i++) values[variables[i]!] = unescape(m[i + 1]!);
      return values;
    },
    explain(line) {
      return explainMismatch(elements, line);
    },
  };
}

const excerpt = (line: string, at: number) => JSON.stringify(line.slice(at, at + 24) + (line.length > at + 24 ? "…" : ""));

/**
 * Walks the format over a line that does not match it, each variable taking
 * the least text before the literal after it, and names the first part that
 * fails with its column (1-based).
 */
function explainMismatch(elements: Element[], line: string): string {
  let at = 0;
  for (let i = 0; i < elements.length; i++) {
    const element = elements[i]!;
    if ("literal" in element) {
      if (!line.startsWith(element.literal, at)) {
        const where = at >= line.length ? "the line ends" : `found ${excerpt(line, at)}`;
        return `expected ${JSON.stringify(element.literal)} at column ${at + 1}, ${where}`;
      }
      at += element.literal.length;
      continue;
    }
    const name = element.variable;
    const shape = shapes[name];
    if (shape !== undefined) {
      const m = new RegExp(`(?:${shape[0]})`, "y");
      m.lastIndex = at;
      const found = m.exec(line);
      if (!found) return `expected $${name} (${shape[1]}) at column ${at + 1}, found ${excerpt(line, at)}`;
      at += found[0].length;
      continue;
    }
    const next = elements[i + 1];
    if (next === undefined) return `the line does not match the format`;
    if ("literal" in next) {
      const end = line.indexOf(next.literal, at);
      if (end < 0) return `expected ${JSON.stringify(next.literal)} after $${name} (from column ${at + 1}), the line ends`;
      at = end;
    }
  }
  if (at < line.length) return `unexpected text after the last field at column ${at + 1}: ${excerpt(line, at)}`;
  return "the line does not match the format";
}

/** The access-log formats known by name. */
export const namedFormats = {
  /** Apache/NCSA combined, as nginx (`combined`) and Apache httpd (`%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-agent}i"`) write it. */
  combined:
    '$remote_addr $remote_ident $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"',
  /** Apache/NCSA common: combined without referrer and user agent. */
  common: '$remote_addr $remote_ident $remote_user [$time_local] "$request" $status $body_bytes_sent',
  /**
   * The forge's default access-log template (`RemoteHost - Identity [time]
   * "METHOD URI PROTO" status size "referer" "ua"`): combined's shape, the
   * first field `ip` or `ip:port`, referrer and user agent written unescaped.
   */
  forge:
    '$remote_addr $remote_ident $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"',
} as const;

export type FormatName = keyof typeof namedFormats | "auto";

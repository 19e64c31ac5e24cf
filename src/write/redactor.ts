/**
 * Redaction of credentials in text before it is stored (docs/privacy.md).
 * Pure and dependency-free: the server's write path (privacy.ts) and the
 * SDK's request logger both use it, so what an app sends and what the
 * server keeps are redacted by the same rules.
 */

/** What a redacted value is replaced by. */
export const redactionMarker = "REDACTED";

/**
 * Query (and key=value) parameters whose values are credentials, matched
 * without regard to case: signed-URL signatures and credentials (the
 * forge's `sig`, S3's and GCS's), OAuth and API tokens, passwords.
 */
export const defaultRedactedParams: readonly string[] = [
  "sig",
  "signature",
  "token",
  "access_token",
  "private_token",
  "refresh_token",
  "id_token",
  "password",
  "passwd",
  "secret",
  "client_secret",
  "api_key",
  "apikey",
  "X-Amz-Signature",
  "X-Amz-Credential",
  "X-Amz-Security-Token",
  "X-Goog-Signature",
  "X-Goog-Credential",
];

/** A pattern of the operator's (RE2, from --redact-pattern): global, with match indices ("gd"). */
export interface RedactPattern {
  lastIndex: number;
  exec(text: string): (RegExpExecArray & { indices?: ([number, number] | undefined)[] }) | null;
}

export interface RedactorOptions {
  /** The built-in rules (credential parameters, userinfo, Authorization credentials, reqlog tokens). */
  defaults: boolean;
  /** More parameter names whose values are redacted (any case). */
  params: readonly string[];
  /**
   * Patterns whose matches are redacted: the whole match, or only what its
   * capturing groups matched when it has any.
   */
  patterns: readonly RedactPattern[];
}

/** Replaces credentials in text by the marker, keeping the text's shape (names, separators, the URL around them). */
export interface Redactor {
  /**
   * A resource or a referrer: credential parameters, userinfo, reqlog
   * tokens and the operator's patterns (a URL holds no spaces, so no
   * `Bearer …`).
   */
  url(text: string): string;
  /** A line of text (an app line, a whole combined line): every rule. */
  text(text: string): string;
}

/** Passes of the rules at most (an operator's pattern that matches the marker itself would never settle). */
const maxPasses = 4;

/** Characters that can come right before a parameter's name: the query's `?`, a separator, or in a line of text a space or a quote. */
const beforeName = (c: number) => c === 0x3f || c === 0x26 || c === 0x3b || c === 0x22 || c === 0x27 || isSpace(c);

/** Characters that end a parameter's value: the query's separators, and what ends a URL inside a line of text. */
const afterValue = (c: number) => c === 0x26 || c === 0x23 || c === 0x3b || c === 0x22 || c === 0x27 || c === 0x3c || c === 0x3e || isSpace(c);

function isSpace(c: number): boolean {
  return c <= 0x20 || (c >= 0x7f && c <= 0xa0) || (c > 0xff && /\s/.test(String.fromCharCode(c)));
}

/**
 * Redacts the values of the named parameters: a name (any case) right
 * after `?`, `&`, `;`, a space or a quote, then `=` and a value up to the
 * next separator (`?a=1&sig=…&b=2`, `user=alice password=…`,
 * `"url.query":"token=…"`). Written as a scan from each "=" rather than a
 * regular expression: a query string costs one lookup per parameter.
 */
function paramRule(names: readonly string[]): Rule | undefined {
  if (names.length === 0) return undefined;
  const lower = new Set(names.map((n) => n.toLowerCase()));
  const lengths = new Set([...lower].map((n) => n.length));
  const longest = Math.max(...lengths);
  return {
    inUrls: true,
    may: (text) => text.includes("="),
    apply(text) {
      let out = "";
      let at = 0;
      for (let eq = text.indexOf("="); eq >= 0; eq = text.indexOf("=", eq + 1)) {
        let start = eq;
        while (start > 0 && eq - start <= longest && !beforeName(text.charCodeAt(start - 1))) start--;
        if (start === eq || eq - start > longest || (start > 0 && !beforeName(text.charCodeAt(start - 1)))) continue;
        if (!lengths.has(eq - start) || !lower.has(text.slice(start, eq).toLowerCase())) continue;
        let end = eq + 1;
        while (end < text.length && !afterValue(text.charCodeAt(end))) end++;
        if (end === eq + 1) continue;
        out += text.slice(at, eq + 1) + redactionMarker;
        at = end;
        eq = end - 1;
      }
      return at === 0 ? text : out + text.slice(at);
    },
  };
}

/** Basic credentials are base64 of `user:password`; other words after "Basic" ("Basic auth") are left alone. */
function basicCredentials(credentials: string): boolean {
  return Buffer.from(credentials, "base64").includes(0x3a);
}

interface Rule {
  /** A cheap test of whether the rule can match at all (most text has none of these). */
  may: (text: string) => boolean;
  apply: (text: string) => string;
  /** Whether it can match inside a URL (false: only in lines of text). */
  inUrls: boolean;
}

const replacing = (pattern: RegExp, replacement: string) => (text: string) => text.replace(pattern, replacement);

/** The built-in rules besides parameters, in the order they run. */
const defaultRules: Rule[] = [
  {
    // https://user:password@host, https://token@host: the whole userinfo (a token may be the user name).
    inUrls: true,
    may: (text) => text.includes("@") && text.includes("://"),
    apply: replacing(/(\b[a-z][a-z0-9+.-]*:\/\/)[^/?#@\s"'<>]+@/gi, `$1${redactionMarker}@`),
  },
  {
    // The forge's own scheme (Gitea, GitHub): `Authorization: token <token>`; and GitLab's Private-Token header.
    inUrls: false,
    may: (text) => /authorization|private-token/i.test(text),
    apply: replacing(
      /\b(authorization["']?\s*[:=]\s*["']?token\s+|private-token["']?\s*[:=]\s*["']?)[^\s"',;]+/gi,
      `$1${redactionMarker}`,
    ),
  },
  {
    // Bearer tokens (RFC 6750's token68, and whatever of its characters follows) of eight characters or
    // more: shorter words after "bearer" are prose.
    inUrls: false,
    may: (text) => /bearer/i.test(text),
    apply: replacing(/\b(bearer\s+)[A-Za-z0-9\-._~+/=]{8,}/gi, `$1${redactionMarker}`),
  },
  {
    inUrls: false,
    may: (text) => /basic/i.test(text),
    apply: (text) =>
      text.replace(/\b(basic\s+)([A-Za-z0-9+/]{4,}={0,2})(?![A-Za-z0-9+/=])/gi, (all, lead: string, credentials: string) =>
        basicCredentials(credentials) ? `${lead}${redactionMarker}` : all,
      ),
  },
  {
    // reqlog's own tokens (tokens.ts): the public key id is kept, the secret goes.
    inUrls: true,
    may: (text) => text.includes("rql_"),
    apply: replacing(/\b(rql_[0-9a-f]{16}_)[A-Za-z0-9_-]+/g, `$1${redactionMarker}`),
  },
];

/** What one of the built-in rules needs to find in a line of text before it can match. */
const defaultTextTrigger = /[=@]|b(?:earer|asic)|authorization|private-token|rql_/i;

/** The same for a URL. */
const defaultUrlTrigger = (text: string) => text.includes("=") || text.includes("@") || text.includes("rql_");

/**
 * Rules applied until nothing changes: what one rule leaves can complete a
 * match of another ("Bearer card=…" once a pattern has redacted the
 * number), and redacting twice must change nothing more. Text without
 * credentials takes one test (`trigger`) and text with some one more pass.
 */
function applying(rules: readonly Rule[], trigger: ((text: string) => boolean) | undefined): (text: string) => string {
  const pass = (text: string) => {
    let out = text;
    for (const rule of rules) if (rule.may(out)) out = rule.apply(out);
    return out;
  };
  return (text) => {
    if (trigger !== undefined && !trigger(text)) return text;
    let out = text;
    for (let passes = 0; passes < maxPasses; passes++) {
      const next = pass(out);
      if (next === out) break;
      out = next;
    }
    return out;
  };
}

/** A pattern's matches (or their groups' text) replaced by the marker. */
function patternRule(pattern: RedactPattern): Rule {
  return {
    inUrls: true,
    may: () => true,
    apply(text) {
      let out = "";
      let at = 0;
      pattern.lastIndex = 0;
      for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) {
        const groups = (m.indices ?? []).slice(1).filter((g): g is [number, number] => g !== undefined);
        const spans = m.length > 1 ? groups : [[m.index, m.index + m[0].length] as [number, number]];
        for (const [start, end] of spans) {
          if (start < at || end === start) continue;
          out += text.slice(at, start) + redactionMarker;
          at = end;
        }
        if (m[0].length === 0) pattern.lastIndex++;
      }
      return at === 0 ? text : out + text.slice(at);
    },
  };
}

/**
 * A redactor of credential parameters' values (`?expires=…&sig=REDACTED`),
 * URL userinfo, Authorization credentials and reqlog tokens, and of what
 * the operator's patterns match. Applying it twice changes nothing more.
 */
export function createRedactor(options: RedactorOptions): Redactor {
  const params = paramRule([...(options.defaults ? defaultRedactedParams : []), ...options.params]);
  const rules: Rule[] = [...(params ? [params] : []), ...(options.defaults ? defaultRules : []), ...options.patterns.map(patternRule)];
  // An operator's pattern must always run; otherwise a scan decides for most text that no rule applies.
  const custom = options.patterns.length > 0;
  const textTrigger = custom ? undefined : options.defaults ? (text: string) => defaultTextTrigger.test(text) : (text: string) => text.includes("=");
  const urlTrigger = custom ? undefined : options.defaults ? defaultUrlTrigger : (text: string) => text.includes("=");
  return {
    url: applying(rules.filter((r) => r.inUrls), urlTrigger),
    text: applying(rules, textTrigger),
  };
}

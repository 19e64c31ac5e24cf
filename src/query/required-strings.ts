import { parseRe2, type Re2Node } from "./re2-syntax.js";

/**
 * What any text a pattern matches in must contain: an AND/OR of "contains
 * this string" (each string at least 3 characters), or `all` (nothing is
 * certain: every text may match) or `none`.
 */
export type StringQuery =
  | { op: "all" }
  | { op: "none" }
  | { op: "and" | "or"; args: readonly StringQuery[] }
  | { op: "has"; s: string };

const all: StringQuery = { op: "all" };
const none: StringQuery = { op: "none" };

/** Strings shorter than this (in characters) are not required: an index of trigrams holds nothing shorter. */
export const minRequired = 3;

/** Exact sets of more strings than this become prefix and suffix sets (3 case-folded letters give 8). */
const maxExact = 7;
/** Prefix and suffix sets are trimmed until they hold at most this many strings. */
const maxSet = 20;

/** Length in characters (code points), as the index counts them. */
export function charLength(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

const head = (s: string, n: number) => Array.from(s).slice(0, n).join("");
const tail = (s: string, n: number) => {
  const cps = Array.from(s);
  return cps.slice(Math.max(0, cps.length - n)).join("");
};

/**
 * q AND r / q OR r, flattened and simplified: `all` and `none` absorbed,
 * repeated strings dropped, and a string that contains another one in the
 * same AND makes that one redundant (in an OR, the longer one goes).
 */
export function combine(op: "and" | "or", parts: readonly StringQuery[]): StringQuery {
  const args: StringQuery[] = [];
  for (const p of parts) {
    if (p.op === op) args.push(...p.args);
    else args.push(p);
  }
  const absorbing = op === "and" ? "none" : "all";
  const neutral = op === "and" ? "all" : "none";
  if (args.some((a) => a.op === absorbing)) return op === "and" ? none : all;
  const strings = [...new Set(args.flatMap((a) => (a.op === "has" ? [a.s] : [])))];
  const kept = strings.filter((s) =>
    op === "and"
      ? !strings.some((t) => t !== s && t.includes(s)) // s is implied by a longer t
      : !strings.some((t) => t !== s && s.includes(t)), // s implies a shorter t in the OR
  );
  const seen = new Set<string>();
  const rest = args.filter((a) => {
    if (a.op === "has" || a.op === neutral) return false;
    const key = JSON.stringify(a);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  const out = [...kept.map((s): StringQuery => ({ op: "has", s })), ...rest];
  if (op === "or" && rest.length === 0 && kept.length > 2) {
    // Many strings around a shared start or end ("artifacts/0" … "artifacts/9"):
    // those alone, a weaker but far smaller requirement.
    const ends = [sharedEnd(kept, false), sharedEnd(kept, true)].filter((e) => charLength(e) >= minRequired);
    if (ends.length > 0) return combine("and", ends.map((s): StringQuery => ({ op: "has", s })));
  }
  if (out.length === 0) return op === "and" ? all : none;
  return out.length === 1 ? out[0]! : { op, args: out };
}

/** The longest prefix (or suffix) all the strings share, in whole characters. */
function sharedEnd(strings: readonly string[], suffix: boolean): string {
  const lists = strings.map((s) => (suffix ? Array.from(s).reverse() : Array.from(s)));
  let n = 0;
  while (lists.every((l) => n < l.length && l[n] === lists[0]![n])) n++;
  const piece = lists[0]!.slice(0, n);
  return (suffix ? piece.reverse() : piece).join("");
}

/** The OR of "contains s" over a set (`all` when one is too short to require). */
function hasAny(set: ReadonlySet<string>): StringQuery {
  if (set.size === 0) return all;
  for (const s of set) if (charLength(s) < minRequired) return all;
  return combine("or", [...set].map((s) => ({ op: "has", s })));
}

/**
 * What is known of the strings a part of a pattern matches (Russ Cox,
 * "Regular Expression Matching with a Trigram Index", 2012): whether it
 * matches the empty string, the exact set of its strings when small, else
 * sets of their prefixes and suffixes, and a query every one satisfies.
 */
interface Info {
  canEmpty: boolean;
  exact: Set<string> | undefined;
  prefix: Set<string>;
  suffix: Set<string>;
  match: StringQuery;
}

const anyChar = (): Info => ({ canEmpty: false, exact: undefined, prefix: new Set([""]), suffix: new Set([""]), match: all });
const anyString = (): Info => ({ ...anyChar(), canEmpty: true });
const emptyString = (): Info => ({ canEmpty: true, exact: new Set([""]), prefix: new Set(), suffix: new Set(), match: all });

function cross(a: ReadonlySet<string>, b: ReadonlySet<string>): Set<string> {
  const out = new Set<string>();
  for (const x of a) for (const y of b) out.add(x + y);
  return out;
}

const union = (a: ReadonlySet<string>, b: ReadonlySet<string>) => new Set([...a, ...b]);
const prefixesOf = (x: Info) => x.exact ?? x.prefix;
const suffixesOf = (x: Info) => x.exact ?? x.suffix;

/** Drops strings that another member starts (or, for suffixes, ends) with: they say nothing more. */
function clean(set: Set<string>, suffixes: boolean): Set<string> {
  const members = [...set];
  return new Set(
    members.filter((s) => !members.some((t) => t !== s && (suffixes ? s.endsWith(t) : s.startsWith(t)))),
  );
}

function addExact(info: Info): void {
  if (info.exact) info.match = combine("and", [info.match, hasAny(info.exact)]);
}

/** Keeps the sets small: what a set knows goes into the match query before it is trimmed. */
function simplify(info: Info, force: boolean): void {
  if (info.exact) {
    let minLen = Number.POSITIVE_INFINITY;
    for (const s of info.exact) minLen = Math.min(minLen, charLength(s));
    if (info.exact.size > maxExact || (force && minLen >= minRequired)) {
      addExact(info);
      for (const s of info.exact) {
        info.prefix.add(head(s, minRequired - 1));
        info.suffix.add(tail(s, minRequired - 1));
      }
      info.exact = undefined;
    }
  }
  if (!info.exact) {
    info.prefix = simplifySet(info, info.prefix, false);
    info.suffix = simplifySet(info, info.suffix, true);
  }
}

function simplifySet(info: Info, set: Set<string>, suffixes: boolean): Set<string> {
  let t = clean(set, suffixes);
  info.match = combine("and", [info.match, hasAny(t)]);
  // Only the last two characters can still start a required string with what follows.
  for (let n = minRequired; n >= 1 && (n === minRequired || t.size > maxSet); n--) {
    t = clean(new Set([...t].map((s) => (charLength(s) >= n ? (suffixes ? tail(s, n - 1) : head(s, n - 1)) : s))), suffixes);
  }
  return t;
}

function concat(x: Info, y: Info): Info {
  const xy: Info = { canEmpty: x.canEmpty && y.canEmpty, exact: undefined, prefix: new Set(), suffix: new Set(), match: combine("and", [x.match, y.match]) };
  if (x.exact && y.exact) {
    xy.exact = cross(x.exact, y.exact);
  } else {
    xy.prefix = x.exact ? cross(x.exact, y.prefix) : x.canEmpty ? union(x.prefix, prefixesOf(y)) : new Set(x.prefix);
    xy.suffix = y.exact ? cross(x.suffix, y.exact) : y.canEmpty ? union(y.suffix, suffixesOf(x)) : new Set(y.suffix);
  }
  // A string across the boundary (the end of x's match, the start of y's).
  if (!x.exact && !y.exact && x.suffix.size <= maxSet && y.prefix.size <= maxSet) {
    xy.match = combine("and", [xy.match, hasAny(cross(x.suffix, y.prefix))]);
  }
  simplify(xy, false);
  return xy;
}

function alternate(x: Info, y: Info): Info {
  const xy: Info = { canEmpty: x.canEmpty || y.canEmpty, exact: undefined, prefix: new Set(), suffix: new Set(), match: all };
  if (x.exact && y.exact) {
    xy.exact = union(x.exact, y.exact);
    xy.match = combine("or", [x.match, y.match]);
  } else {
    // An exact side's strings become its prefixes and suffixes, and its requirement.
    for (const side of [x, y]) addExact(side);
    xy.prefix = union(prefixesOf(x), prefixesOf(y));
    xy.suffix = union(suffixesOf(x), suffixesOf(y));
    xy.match = combine("or", [x.match, y.match]);
  }
  simplify(xy, false);
  return xy;
}

function analyze(node: Re2Node): Info {
  switch (node.kind) {
    case "chars": {
      const info: Info = { ...emptyString(), canEmpty: false, exact: new Set(node.chars.map((c) => String.fromCodePoint(c))) };
      simplify(info, false);
      return info;
    }
    case "char":
      return anyChar();
    case "anything":
      return anyString();
    case "empty":
      return emptyString();
    case "concat": {
      // Runs of exact parts (the characters of a literal) are joined first,
      // so a literal after an inexact part stays one string.
      let done = emptyString();
      let run: Info | undefined;
      for (const part of node.parts.map(analyze)) {
        if (part.exact) {
          run = run ? concat(run, part) : part;
          continue;
        }
        if (run) done = concat(done, run);
        run = undefined;
        done = concat(done, part);
      }
      return run ? concat(done, run) : done;
    }
    case "alternate":
      return node.parts.map(analyze).reduce(alternate);
    case "repeat": {
      if (node.max === 0) return emptyString();
      if (node.min === 0) return node.max === 1 ? alternate(analyze(node.part), emptyString()) : anyString();
      // At least one: its prefixes and suffixes stay, but its exact set is no longer exact.
      const info = analyze(node.part);
      if (info.exact) {
        info.prefix = new Set(info.exact);
        info.suffix = new Set(info.exact);
        info.exact = undefined;
      }
      simplify(info, false);
      return info;
    }
  }
}

/**
 * The strings every match of an RE2 pattern must contain (a match is a
 * piece of the searched text, so the text contains them too): `all` when
 * nothing is certain, or the pattern is not understood (re2-syntax.ts).
 */
export function requiredStrings(pattern: string): StringQuery {
  const tree = parseRe2(pattern);
  if (!tree) return all;
  const info = analyze(tree);
  simplify(info, true);
  addExact(info);
  return info.match;
}

/** Whether `text` satisfies the query (what the tests check every match against). */
export function satisfies(query: StringQuery, text: string): boolean {
  switch (query.op) {
    case "all":
      return true;
    case "none":
      return false;
    case "has":
      return text.includes(query.s);
    case "and":
      return query.args.every((q) => satisfies(q, text));
    case "or":
      return query.args.some((q) => satisfies(q, text));
  }
}

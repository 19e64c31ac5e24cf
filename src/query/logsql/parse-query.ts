import RE2 from "re2";
import type { ByField, Column, Filter, Pipe, Query, SortKey, StatsFn, StatsFunc } from "./query-ast.js";
import { queryError } from "./query-error.js";
import { closestName, defaultColumns, type FieldType, isNumeric, queryField, queryFields } from "./query-fields.js";
import { type Position, type Token, tokenize } from "./query-lexer.js";
import { cidr, ipv4, parseDuration, parseNumber, parseTime } from "./query-values.js";

/**
 * Parses a query in reqlog's subset of VictoriaLogs' LogsQL: the filters
 * (words, phrases, prefixes, `f:value`, `f:="exact"`, `f:in(…)`, `f:~"RE2"`,
 * `f:>N` with units, `range`, `ipv4_range`, `i(…)`, `_time` in LogsQL's
 * forms, AND (or a space), OR, NOT / `-` / `!`, parentheses) and the pipes
 * `stats`, `sort`, `limit`, `offset`, `fields`, `top` and `filter`.
 * Parsing follows VictoriaLogs' parser (parser.go) step by step, so a
 * query means here what it means there; docs/query.md lists where reqlog
 * differs. Every error names where it is: `line 1, column 17: …`.
 * `nowUs` is the time relative times (`_time:1h`) count back from.
 */
export function parseQuery(text: string, nowUs: number): Query {
  return new Parser(tokenize(text), nowUs).query();
}

const statsFns: readonly StatsFn[] = ["count", "count_uniq", "sum", "avg", "min", "max", "quantile", "median"];
const pipeNames = ["stats", "sort", "order", "limit", "head", "offset", "skip", "fields", "keep", "top", "filter", "where"];
/** Stop tokens of a phrase (getCompoundPhrase) and of a compound token (getCompoundToken). */
const phraseStops = ["*", ",", "(", ")", "[", "]", "|", ""];
const tokenStops = [",", "(", ")", "[", "]", "|", ""];
/** `_time:step` names besides durations. */
const stepNames: Record<string, number> = {
  microsecond: 1, millisecond: 1e3, second: 1e6, minute: 60e6, hour: 3600e6, day: 86_400e6, week: 7 * 86_400e6,
};

type Schema = Map<string, FieldType>;

class Parser {
  private i = 0;
  /** The fields a filter may name: the request's, then each pipe's output. */
  private schema: Schema = new Map(queryFields.map((f) => [f.name, f.type]));
  private columns: Column[] = defaultColumns.map((name) => ({ name, type: queryField(name)!.type }));
  /** The filter is over stored requests (not a pipe's rows): `_time` filters take LogsQL's time forms. */
  private overRequests = true;

  constructor(
    private readonly tokens: Token[],
    private readonly nowUs: number,
  ) {}

  private get tok(): Token {
    return this.tokens[this.i]!;
  }

  private get prev(): Token | undefined {
    return this.tokens[this.i - 1];
  }

  private next(): void {
    if (this.i < this.tokens.length - 1) this.i++;
  }

  private atEnd(): boolean {
    return this.tok.text === "" && !this.tok.quoted;
  }

  /** The token is one of these (unquoted, case-insensitive; "" is the end). */
  private is(...keywords: string[]): boolean {
    return !this.tok.quoted && keywords.includes(this.tok.text.toLowerCase());
  }

  private fail(message: string, at: Position = this.tok.at): never {
    throw queryError(at, message);
  }

  private describe(token: Token = this.tok): string {
    return token.text === "" && !token.quoted ? "the end of the query" : `'${token.raw}'`;
  }

  private expect(keyword: string, what: string): void {
    if (!this.is(keyword)) this.fail(`expected ${what}, found ${this.describe()}`);
    this.next();
  }

  query(): Query {
    let filter: Filter = { kind: "all" };
    if (this.is("|")) this.fail("a query starts with a filter: write * | … to take every request");
    if (!this.atEnd()) filter = this.filter("");
    const pipes: Pipe[] = [];
    while (this.is("|")) {
      this.next();
      pipes.push(this.pipe());
    }
    if (!this.atEnd()) this.fail(`unexpected ${this.describe()}`);
    return { filter, pipes, columns: this.columns };
  }

  // ---- Filters -------------------------------------------------------------

  private filter(field: string): Filter {
    if (this.is("|", ")", "")) this.fail(`expected a filter, found ${this.describe()}`);
    const first = this.tok;
    if (!this.tok.quoted && pipeNames.includes(this.tok.text.toLowerCase()) && this.tokens[this.i + 1]?.text !== ":") {
      // As LogsQL: a filter cannot start with a pipe's name (a forgotten `|`).
      this.fail(`a filter cannot start with '${first.text}', the name of a pipe: put it in quotes, or add the missing |`);
    }
    return this.or(field);
  }

  private or(field: string): Filter {
    const filters: Filter[] = [];
    for (;;) {
      filters.push(this.and(field));
      if (this.is("|", ")", "")) return filters.length === 1 ? filters[0]! : { kind: "or", filters };
      if (this.is("or")) {
        this.next();
        if (this.is("|", ")", "")) this.fail(`expected a filter after 'or', found ${this.describe()}`);
      }
    }
  }

  private and(field: string): Filter {
    const filters: Filter[] = [];
    for (;;) {
      filters.push(this.generic(field));
      if (this.is("or", "|", ")", "")) return filters.length === 1 ? filters[0]! : { kind: "and", filters };
      if (this.is("and")) {
        this.next();
        if (this.is("or", "|", ")", "")) this.fail(`expected a filter after 'and', found ${this.describe()}`);
      }
    }
  }

  private generic(field: string): Filter {
    const t = this.tok;
    if (this.is(":")) {
      this.next();
      return this.generic(field);
    }
    if (this.is("*")) {
      this.next();
      return field === "" ? { kind: "all" } : { kind: "phrase", field, phrase: "", prefix: true, anyCase: false };
    }
    if (this.is("(")) {
      const p = this.prev;
      if (!t.spaceBefore && p && !(p.text === "" || [":", "(", "!", "-", "not"].includes(p.text.toLowerCase()))) {
        this.fail(`missing space between '${p.raw}' and '('`);
      }
      this.next();
      const inner = this.or(field);
      this.expect(")", "')'");
      return inner;
    }
    if (this.is(">", "<")) return this.compare(field || "_msg");
    if (this.is("=")) return this.exact(field || "_msg", false);
    if (this.is("!=")) return { kind: "not", filter: this.exact(field || "_msg", true) };
    if (this.is("~")) return this.regex(field || "_msg");
    if (this.is("!~")) return { kind: "not", filter: this.regex(field || "_msg") };
    if (this.is("not", "!", "-")) {
      const word = this.tok;
      this.next();
      if (this.is("or", "and", "|", ")", "")) this.fail(`expected a filter after '${word.raw}', found ${this.describe()}`);
      const inner = this.generic(field);
      return inner.kind === "not" ? inner.filter : { kind: "not", filter: inner };
    }
    const after = this.tokens[this.i + 1];
    const followedByParen = after !== undefined && after.text === "(" && !after.quoted;
    if (followedByParen || (this.is("range") && this.tokens[this.i + 1]?.text === "[")) {
      const f = field || "_msg";
      if (this.is("i")) return this.anyCase(f);
      if (this.is("in")) return this.inList(f);
      if (this.is("exact")) return this.exactCall(f);
      if (this.is("re")) return this.regexCall(f);
      if (this.is("ipv4_range")) return this.ipv4Range(f);
      if (this.is("range")) return this.rangeCall(f);
      if (this.is("seq", "contains_all", "contains_any", "len_range", "string_range", "value_type", "eq_field", "le_field", "lt_field")) {
        this.fail(`reqlog does not take LogsQL's ${t.text}() filter (docs/query.md lists the filters it takes)`);
      }
    }
    if (this.is("{")) this.fail("reqlog has no log streams: filter on fields instead ({…} stream filters are not taken)");
    if (this.is('"', "'", "`")) this.fail("a quoted string is not closed");
    if (this.is(",", ")", "[", "]")) this.fail(`unexpected ${this.describe()}`);
    return this.phraseOrField(field);
  }

  /** A word, phrase or prefix; or, followed by `:`, the name of the field the next filter applies to. */
  private phraseOrField(field: string): Filter {
    const start = this.tok;
    const phrase = this.compoundPhrase(field !== "");
    if (field !== "" || !this.is(":")) {
      const f = field || "_msg";
      this.checkTextFilter(f, start);
      if (this.is("*") && !this.tok.spaceBefore) {
        this.next();
        return { kind: "phrase", field: f, phrase, prefix: true, anyCase: false };
      }
      return { kind: "phrase", field: f, phrase, prefix: false, anyCase: false };
    }
    const name = phrase;
    this.resolve(name, start.at);
    this.next(); // ':'
    if (this.is("") || this.is("|", ")")) this.fail(`expected a filter after '${name}:', found ${this.describe()}`);
    if (name === "_time" && this.overRequests) return this.timeFilter();
    return this.generic(name);
  }

  /** LogsQL's getCompoundPhrase: tokens written together (no space) make one phrase, `/api/v1/repos` as one. */
  private compoundPhrase(allowColon: boolean): string {
    if (this.is(...phraseStops)) this.fail(`expected a word or phrase, found ${this.describe()}`);
    const first = this.tok;
    this.next();
    let suffix = "";
    const stops = allowColon ? phraseStops : [...phraseStops, ":"];
    while (!this.tok.spaceBefore && !this.is(...stops)) {
      suffix += this.tok.raw;
      this.next();
    }
    return suffix === "" ? first.text : first.raw + suffix;
  }

  /** LogsQL's getCompoundToken: a value written without spaces (`2026-11-20T10:00Z`, `-1.5`). */
  private compoundToken(what: string): { text: string; at: Position } {
    if (this.is(...tokenStops)) this.fail(`expected ${what}, found ${this.describe()}`);
    const at = this.tok.at;
    let text = this.tok.text;
    this.next();
    while (!this.tok.spaceBefore && !this.is(...tokenStops)) {
      text += this.tok.text;
      this.next();
    }
    return { text, at };
  }

  /** LogsQL's getCompoundFuncArg: one argument of a function (`*` and `,`, `(`, `)`, `|` end it). */
  private funcArg(): string {
    if (this.is("*")) return "";
    const first = this.tok;
    this.next();
    let suffix = "";
    while (!this.tok.spaceBefore && !this.is("*", ",", "(", ")", "|", "")) {
      suffix += this.tok.raw;
      this.next();
    }
    return suffix === "" ? first.text : first.raw + suffix;
  }

  /** `name(arg, …)`: the arguments, each with where it starts. */
  private args(name: string): { text: string; at: Position }[] {
    this.next(); // the name
    this.expect("(", `'(' after ${name}`);
    const args: { text: string; at: Position }[] = [];
    while (!this.is(")")) {
      if (this.is(",", "(", "")) this.fail(`expected an argument of ${name}(), found ${this.describe()}`);
      const at = this.tok.at;
      args.push({ text: this.funcArg(), at });
      if (this.is(")")) break;
      this.expect(",", `',' or ')' in ${name}()`);
    }
    this.next();
    return args;
  }

  private resolve(name: string, at: Position): FieldType {
    const type = this.schema.get(name);
    if (type !== undefined) return type;
    const near = closestName(name, this.schema.keys());
    return this.fail(`unknown field '${name}'${near ? ` (did you mean '${near}'?)` : ""}`, at);
  }

  private checkTextFilter(field: string, at: Token): void {
    if (field === "_time" && this.overRequests) this.fail("_time takes a time filter (_time:1h, _time:[2026-11-20, 2026-11-21))", at.at);
  }

  private exact(field: string, negated: boolean): Filter {
    const op = this.tok.raw;
    this.next();
    const value = this.funcArg();
    if (this.is("*") && !this.tok.spaceBefore) {
      if (negated) this.fail(`${op} takes no trailing *`);
      this.next();
      return { kind: "exact", field, value, prefix: true };
    }
    return { kind: "exact", field, value, prefix: false };
  }

  private exactCall(field: string): Filter {
    const [arg, ...more] = this.args("exact");
    if (!arg || more.length > 0) this.fail("exact() takes one value");
    return { kind: "exact", field, value: arg.text, prefix: false };
  }

  private regex(field: string): Filter {
    const op = this.tok;
    this.next();
    const at = this.tok.at;
    if (this.is("", "|", ")")) this.fail(`expected an RE2 pattern after '${op.raw}', found ${this.describe()}`);
    return { kind: "regex", field, pattern: checkPattern(this.funcArg(), at) };
  }

  private regexCall(field: string): Filter {
    const [arg, ...more] = this.args("re");
    if (!arg || more.length > 0) this.fail("re() takes one pattern");
    return { kind: "regex", field, pattern: checkPattern(arg.text, arg.at) };
  }

  private anyCase(field: string): Filter {
    this.next();
    this.expect("(", "'(' after i");
    const value = this.funcArg();
    let prefix = false;
    if (this.is("*") && !this.tok.spaceBefore) {
      prefix = true;
      this.next();
    }
    this.expect(")", "')' to close i(");
    return { kind: "phrase", field, phrase: value, prefix, anyCase: true };
  }

  private inList(field: string): Filter {
    const at = this.tok.at;
    const args = this.args("in");
    if (args.length === 0) this.fail("in() needs at least one value", at);
    return { kind: "in", field, values: args.map((a) => a.text) };
  }

  private ipv4Range(field: string): Filter {
    const at = this.tok.at;
    const args = this.args("ipv4_range");
    if (args.length === 1) {
      const range = cidr(args[0]!.text);
      if (!range) this.fail(`'${args[0]!.text}' is not an IPv4 address or CIDR (10.0.0.0/8)`, args[0]!.at);
      return { kind: "ipv4Range", field, ...range };
    }
    if (args.length !== 2) this.fail("ipv4_range() takes a CIDR, or a first and a last address", at);
    const [lo, hi] = args.map((a) => ({ n: ipv4(a.text), a }));
    for (const { n, a } of [lo!, hi!]) if (n === undefined) this.fail(`'${a.text}' is not an IPv4 address`, a.at);
    return { kind: "ipv4Range", field, min: lo!.n!, max: hi!.n! };
  }

  private rangeCall(field: string): Filter {
    const type = this.resolve(field, this.tok.at);
    this.next(); // range
    const minInclusive = this.is("[");
    if (!this.is("(", "[")) this.fail(`expected '(' or '[' after range, found ${this.describe()}`);
    this.next();
    const min = this.bound(field, type);
    this.expect(",", "',' between the bounds of range");
    const max = this.bound(field, type);
    if (!this.is(")", "]")) this.fail(`expected ')' or ']' to close range, found ${this.describe()}`);
    const maxInclusive = this.is("]");
    this.next();
    return { kind: "range", field, min, minInclusive, max, maxInclusive };
  }

  /** A bound of a number field: a number, or a duration for duration fields. */
  private bound(field: string, type: FieldType): number {
    const { text, at } = this.compoundToken("a number");
    const n = parseNumber(text) ?? (type === "duration" ? parseDuration(text) : undefined);
    if (n === undefined) {
      this.fail(
        type === "duration"
          ? `'${text}' is not a duration (${field} is in µs: 250ms, 1.5s, 2m, or a number of µs)`
          : `'${text}' is not a number (${field} holds numbers: 500, 1.5K, 1MB)`,
        at,
      );
    }
    return n;
  }

  /** `>` or `<`, and an `=` right after it: which way, and whether the bound is in. */
  private comparison(): { greater: boolean; inclusive: boolean } {
    const greater = this.is(">");
    this.next();
    const inclusive = this.is("=") && !this.tok.spaceBefore;
    if (inclusive) this.next();
    return { greater, inclusive };
  }

  /** `f:>X`, `f:>=X`, `f:<X`, `f:<=X`: a number range on number fields, a text range on the others. */
  private compare(field: string): Filter {
    const type = this.resolve(field, this.tok.at);
    const { greater, inclusive } = this.comparison();
    if (isNumeric(type)) {
      if (type === "time") {
        const { text, at } = this.compoundToken("a time");
        const t = parseTime(text, this.nowUs);
        if (!t) this.fail(`'${text}' is not a time (2026-11-20, 2026-11-20T10:00:00Z)`, at);
        return greater
          ? { kind: "range", field, min: inclusive ? t.start : t.end, minInclusive: inclusive, max: Infinity, maxInclusive: true }
          : { kind: "range", field, min: -Infinity, minInclusive: true, max: inclusive ? t.end : t.start, maxInclusive: inclusive };
      }
      const n = this.bound(field, type);
      return greater
        ? { kind: "range", field, min: n, minInclusive: inclusive, max: Infinity, maxInclusive: true }
        : { kind: "range", field, min: -Infinity, minInclusive: true, max: n, maxInclusive: inclusive };
    }
    const { text } = this.compoundToken("a value");
    return greater
      ? { kind: "textRange", field, min: text, minInclusive: inclusive, maxInclusive: false }
      : { kind: "textRange", field, max: text, maxInclusive: inclusive, minInclusive: false };
  }

  /** What follows `_time:` in a filter over requests (LogsQL's time filter). */
  private timeFilter(): Filter {
    let f: { min: number; max: number };
    if (this.is("[", "(")) {
      const minInclusive = this.is("[");
      this.next();
      const lo = this.time();
      this.expect(",", "',' between the start and the end of the time range");
      const hi = this.time();
      if (!this.is("]", ")")) this.fail(`expected ']' or ')' to close the time range, found ${this.describe()}`);
      const maxInclusive = this.is("]");
      this.next();
      f = { min: minInclusive ? lo.start : lo.end + 1, max: maxInclusive ? hi.end : hi.start - 1 };
    } else if (this.is(">", "<")) {
      const { greater, inclusive } = this.comparison();
      const { text, at } = this.compoundToken("a time or a duration");
      const d = startsWithYear(text) || /^now/i.test(text) ? undefined : parseDuration(text);
      if (d !== undefined) {
        // `_time:>1h`: older than an hour ago; `_time:<1h`: within the last hour.
        const edge = this.nowUs - Math.abs(d);
        f = greater ? { min: -Infinity, max: inclusive ? edge : edge - 1 } : { min: inclusive ? edge : edge + 1, max: Infinity };
      } else {
        const t = parseTime(text, this.nowUs);
        if (!t) this.fail(`'${text}' is neither a time (2026-11-20T10:00Z) nor a duration (1h)`, at);
        f = greater ? { min: inclusive ? t.start : t.end + 1, max: Infinity } : { min: -Infinity, max: inclusive ? t.end : t.start - 1 };
      }
    } else {
      const { text, at } = this.compoundToken("a time filter");
      if (/^now$/i.test(text) || startsWithYear(text)) {
        const t = parseTime(text, this.nowUs);
        if (!t) this.fail(`'${text}' is not a time (2026-11-20, 2026-11-20T10:00:00Z)`, at);
        f = { min: t.start, max: t.end };
      } else {
        const d = parseDuration(text);
        if (d === undefined) this.fail(`'${text}' is not a duration (5m, 1h, 7d) or a time (2026-11-20)`, at);
        f = { min: this.nowUs - Math.abs(d) + 1, max: this.nowUs };
      }
    }
    if (this.is("offset")) {
      this.next();
      const { text, at } = this.compoundToken("a duration");
      const d = parseDuration(text);
      if (d === undefined) this.fail(`'${text}' is not a duration`, at);
      f = { min: f.min - d, max: f.max - d };
    }
    return { kind: "time", min: Math.ceil(f.min), max: Math.floor(f.max) };
  }

  private time(): { start: number; end: number } {
    const { text, at } = this.compoundToken("a time");
    const t = parseTime(text, this.nowUs);
    if (!t) this.fail(`'${text}' is not a time (2026-11-20, 2026-11-20T10:00:00Z, now)`, at);
    return t;
  }

  // ---- Pipes ---------------------------------------------------------------

  private pipe(): Pipe {
    const t = this.tok;
    const name = t.quoted ? "" : t.text.toLowerCase();
    if (statsFns.includes(name as StatsFn) && this.tokens[this.i + 1]?.text === "(") return this.stats(true);
    switch (name) {
      case "stats":
        return this.stats(false);
      case "sort":
      case "order":
        return this.sort();
      case "limit":
      case "head": {
        this.next();
        const n = this.is("|", "") ? 10 : this.count(name);
        return { kind: "limit", n };
      }
      case "offset":
      case "skip":
        this.next();
        return { kind: "offset", n: this.count(name) };
      case "fields":
      case "keep":
        return this.fields();
      case "top":
        return this.top();
      case "filter":
      case "where": {
        this.next();
        return { kind: "filter", filter: this.filter("") };
      }
      default:
        return this.fail(
          `unknown pipe ${this.describe()}: reqlog takes stats, sort, limit, offset, fields, top and filter`,
        );
    }
  }

  private count(what: string): number {
    const { text, at } = this.compoundToken(`a count after ${what}`);
    const n = parseNumber(text);
    if (n === undefined || !Number.isInteger(n) || n < 0) this.fail(`'${text}' is not a whole number`, at);
    return n;
  }

  /** The names a pipe lists: `(a, b)` or `a, b`. */
  private names(what: string, allowSteps = false): { name: string; at: Position; step?: number; offset?: number }[] {
    const paren = this.is("(");
    if (paren) this.next();
    const out: { name: string; at: Position; step?: number; offset?: number }[] = [];
    if (paren && this.is(")")) {
      this.next();
      return out;
    }
    for (;;) {
      if (this.is(...tokenStops, ":")) this.fail(`expected a field name in ${what}, found ${this.describe()}`);
      const at = this.tok.at;
      const name = this.tok.text;
      this.next();
      const entry: { name: string; at: Position; step?: number; offset?: number } = { name, at };
      if (allowSteps && this.is(":") && !this.tok.spaceBefore) {
        this.next();
        const type = this.resolve(name, at);
        const step = this.compoundToken("a bucket size");
        const s =
          type === "time" || type === "duration"
            ? (stepNames[step.text.toLowerCase()] ?? parseDuration(step.text) ?? (type === "duration" ? parseNumber(step.text) : undefined))
            : isNumeric(type)
              ? parseNumber(step.text)
              : undefined;
        if (!isNumeric(type)) this.fail(`${name} holds text: only numbers and _time are grouped in buckets`, step.at);
        if (s === undefined || !(s > 0)) this.fail(`'${step.text}' is not a bucket size for ${name}`, step.at);
        entry.step = s;
        if (this.is("offset")) {
          this.next();
          const o = this.compoundToken("an offset");
          const d = type === "time" || type === "duration" ? parseDuration(o.text) : parseNumber(o.text);
          if (d === undefined) this.fail(`'${o.text}' is not an offset`, o.at);
          entry.offset = d;
        }
      }
      out.push(entry);
      if (!paren) {
        if (!this.is(",")) return out;
        this.next();
        continue;
      }
      if (this.is(")")) {
        this.next();
        return out;
      }
      this.expect(",", `',' or ')' in ${what}`);
    }
  }

  private stats(implicit: boolean): Pipe {
    if (!implicit) this.next();
    let by: ByField[] = [];
    if (this.is("by") || (this.is("(") && !implicit)) {
      if (this.is("by")) this.next();
      if (!this.is("(")) this.fail(`expected '(' after by, found ${this.describe()}`);
      const names = this.names("stats by", true);
      by = names.map((n) => {
        this.resolve(n.name, n.at);
        return { field: n.name, ...(n.step !== undefined ? { step: n.step } : {}), ...(n.offset !== undefined ? { offset: n.offset } : {}) };
      });
    }
    const funcs: StatsFunc[] = [];
    const columns: Column[] = by.map((b) => ({ name: b.field, type: this.schema.get(b.field)!, group: true }));
    for (;;) {
      const f = this.statsFunc();
      if (columns.some((c) => c.name === f.func.name)) this.fail(`the result '${f.func.name}' is named twice`, f.at);
      funcs.push(f.func);
      columns.push({ name: f.func.name, type: f.type });
      if (!this.is(",")) break;
      this.next();
    }
    this.setColumns(columns);
    return { kind: "stats", by, funcs };
  }

  private statsFunc(): { func: StatsFunc; type: FieldType; at: Position } {
    const at = this.tok.at;
    const name = this.tok.quoted ? "" : this.tok.text.toLowerCase();
    if (!statsFns.includes(name as StatsFn)) {
      this.fail(`expected a stats function (${statsFns.join(", ")}), found ${this.describe()}`);
    }
    const fn = name as StatsFn;
    const args = this.args(fn);
    let phi: number | undefined;
    let fieldArgs = args;
    if (fn === "quantile") {
      const first = args[0];
      const p = first === undefined ? undefined : parseNumber(first.text);
      if (p === undefined || p < 0 || p > 1) this.fail("quantile(φ, field) takes φ from 0 to 1 first: quantile(0.99, latency)", first?.at ?? at);
      phi = p;
      fieldArgs = args.slice(1);
    }
    if (fn === "median") phi = 0.5;
    const fields = fieldArgs.map((a) => {
      const type = this.resolve(a.text, a.at);
      if ((fn === "sum" || fn === "avg" || fn === "quantile" || fn === "median") && !isNumeric(type)) {
        this.fail(`${fn}() adds up numbers: '${a.text}' holds ${type === "bytes" ? "bytes" : "text"}`, a.at);
      }
      if (fn === "sum" && type === "time") this.fail("sum() of times means nothing: use min(), max() or count()", a.at);
      return a.text;
    });
    if (fn !== "count" && fn !== "count_uniq" && fields.length !== 1) this.fail(`${fn}() takes one field`, at);
    if (fn === "count_uniq" && fields.length === 0) this.fail("count_uniq() takes one field or more", at);
    const written =
      fn === "quantile" ? `quantile(${args[0]!.text}, ${fields.join(", ")})` : `${fn}(${fields.join(", ")})`;
    const fieldType = fields[0] === undefined ? undefined : this.schema.get(fields[0]);
    const type: FieldType =
      fn === "count" || fn === "count_uniq" ? "int" : fn === "avg" ? "float" : fieldType!;
    if (this.is("if")) this.fail("reqlog does not take stats functions with if (…) yet: filter before the stats pipe");
    let resultName = written;
    if (this.is("as")) {
      this.next();
      if (this.is(...tokenStops)) this.fail(`expected a result name after 'as', found ${this.describe()}`);
    }
    if (!this.is(...tokenStops, "as")) resultName = this.compoundToken("a result name").text;
    return { func: { fn, fields, ...(phi !== undefined ? { phi } : {}), name: resultName }, type, at };
  }

  private sort(): Pipe {
    this.next();
    if (this.is("by")) this.next();
    if (!this.is("(")) this.fail(`expected '(' with the fields to sort by, found ${this.describe()}`);
    this.next();
    const by: SortKey[] = [];
    while (!this.is(")")) {
      if (this.is(...tokenStops)) this.fail(`expected a field to sort by, found ${this.describe()}`);
      const at = this.tok.at;
      const field = this.tok.text;
      this.next();
      this.resolve(field, at);
      let desc = false;
      if (this.is("desc", "asc")) {
        desc = this.is("desc");
        this.next();
      }
      by.push({ field, desc });
      if (this.is(")")) break;
      this.expect(",", "',' or ')' in sort by");
    }
    this.next();
    if (by.length === 0) this.fail("sort needs a field to sort by");
    if (this.is("desc")) {
      this.next();
      for (const k of by) k.desc = !k.desc;
    }
    const pipe: Pipe = { kind: "sort", by };
    while (this.is("limit", "offset")) {
      const what = this.tok.text.toLowerCase();
      this.next();
      if (what === "limit") pipe.limit = this.count("limit");
      else pipe.offset = this.count("offset");
    }
    return pipe;
  }

  private fields(): Pipe {
    this.next();
    const names = this.names("fields");
    if (names.length === 0) this.fail("fields needs at least one field");
    const before = new Map(this.columns.map((c) => [c.name, c]));
    const columns = names.map((n) => ({ name: n.name, type: this.resolve(n.name, n.at), ...(before.get(n.name)?.group ? { group: true } : {}) }));
    this.setColumns(columns);
    return { kind: "fields", fields: names.map((n) => n.name) };
  }

  private top(): Pipe {
    this.next();
    let n = 10;
    if (!this.is("by", "(", "|", "", "hits")) n = this.count("top");
    let by: string[] = [];
    if (this.is("by") || this.is("(")) {
      if (this.is("by")) this.next();
      by = this.names("top by").map((x) => {
        this.resolve(x.name, x.at);
        return x.name;
      });
    } else {
      by = this.columns.map((c) => c.name);
    }
    if (by.length === 0) this.fail("top needs a field to count the values of");
    let hitsName = "hits";
    if (this.is("hits")) {
      this.next();
      this.expect("as", "'as' after hits");
      hitsName = this.compoundToken("a name for hits").text;
    }
    const columns: Column[] = by.map((b) => ({ name: b, type: this.schema.get(b)!, group: true }));
    columns.push({ name: hitsName, type: "int" });
    this.setColumns(columns);
    return { kind: "top", n, by, hitsName };
  }

  /** After a pipe that chooses the columns: later pipes see only them. */
  private setColumns(columns: Column[]): void {
    this.columns = columns;
    this.schema = new Map(columns.map((c) => [c.name, c.type]));
    this.overRequests = false;
  }
}

/** LogsQL's startsWithYear: four digits, then the end, `-`, `+` or `Z`. */
function startsWithYear(s: string): boolean {
  return /^\d{4}([-+Zz]|$)/.test(s);
}

function checkPattern(pattern: string, at: Position): string {
  try {
    new RE2(pattern, "u");
  } catch (err) {
    throw queryError(at, `not a valid RE2 pattern: ${err instanceof Error ? err.message : err}`);
  }
  return pattern;
}

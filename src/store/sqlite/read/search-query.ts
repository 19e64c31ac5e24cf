import type Database from "better-sqlite3";
import { linePieces, unindexablePiece } from "../../../query/line-pieces.js";
import { requiredStrings, type StringQuery } from "../../../query/required-strings.js";
import { entryToken } from "../rows/search-doc.js";
import { gramToken, trigramsOf } from "../rows/trigram.js";
import { createStopGramsReader, type StopGrams } from "../rows/stop-grams.js";
import { ipTextSql } from "../rows/stored-record.js";
import { stringKind } from "../rows/strings.js";

/**
 * A regex Read's use of the search index: what the index can be asked
 * (an FTS5 MATCH over request_search that every record whose combined line
 * may match is in), and the same test as cheap SQL on the row for scans.
 * Both are supersets: RE2 decides every match.
 *
 * From the strings every match contains (required-strings.ts), each
 * string is cut at the characters that separate a derived line's fields
 * (space, quote, brackets). A piece without them lies inside one field,
 * the time or a fixed part (plainFields in format/combined-line.ts makes sure of
 * it for every line the store derives). So a piece of three characters or
 * more that cannot lie in the time, the fixed parts, a number, a method or
 * an HTTP version lies in the ip, nickname or resource (whose trigrams are
 * indexed), in a referrer or user agent (whose entries' tokens are), or in
 * a stored line (indexed whole): the record's document has all the
 * piece's trigrams, or one of those tokens.
 */
export interface SearchPlan {
  /** FTS5 MATCH over request_search; undefined: the index cannot narrow this pattern (scan). */
  match?: string;
  /** An SQL test on `requests r` every possible match passes; undefined: none to make. Made when first asked for. */
  prefilter(): string | undefined;
  /** No text can match the pattern. */
  none: boolean;
}

/**
 * Trigrams asked for per piece (a subset of an AND is still implied by it):
 * the first and last of those indexed. Neighbouring trigrams mostly come
 * together (`w/g`, `go.`, `o.m`, `mod`), so more narrow little, and the
 * index's AND costs about one pass over the shortest list per term
 * (measured: 6 terms 6.2 ms, 2 terms 2.1 ms for the same 453 candidates
 * among 10M requests).
 */
const gramsPerPiece = 2;
/** A piece in more referrers and user agents than this requires nothing of the index. */
const maxEntriesPerPiece = 16;

type Cond = { kind: "true" } | { kind: "false" } | { kind: "and" | "or"; args: Cond[] } | { kind: "test"; test: string };

const yes: Cond = { kind: "true" };
const no: Cond = { kind: "false" };

function join(kind: "and" | "or", parts: Cond[]): Cond {
  const absorbing = kind === "and" ? "false" : "true";
  const neutral = kind === "and" ? "true" : "false";
  if (parts.some((p) => p.kind === absorbing)) return kind === "and" ? no : yes;
  const args = parts.filter((p) => p.kind !== neutral).flatMap((p) => (p.kind === kind ? p.args : [p]));
  if (args.length === 0) return kind === "and" ? yes : no;
  return args.length === 1 ? args[0]! : { kind, args };
}

const ftsString = (s: string) => `"${s.replaceAll('"', '""')}"`;
const sqlText = (s: string) => `'${s.replaceAll("'", "''")}'`;

/** Up to `gramsPerPiece` of a piece's trigrams that are indexed, spread over it (the first and last first). */
function gramsOf(piece: string, stop: StopGrams): string[] {
  const indexed = trigramsOf(piece).filter((g) => !stop.any(g));
  if (indexed.length <= gramsPerPiece) return indexed;
  return [...new Set(Array.from({ length: gramsPerPiece }, (_, k) => indexed[Math.round((k * (indexed.length - 1)) / (gramsPerPiece - 1))]!))];
}

/**
 * Plans regex Reads on one connection. Call it inside the Read's
 * transaction: the dictionary it looks pieces up in must be the one the
 * Read's rows refer to.
 */
export function createSearchPlanner(db: Database.Database): SearchPlanner {
  const stopGrams = createStopGramsReader(db);
  const stmt = {
    smallKinds: db
      .prepare(`SELECT text FROM strings WHERE kind IN (${stringKind.method}, ${stringKind.httpVersion}) LIMIT 1001`)
      .pluck(),
    entries: db
      .prepare(
        `SELECT s.id, s.kind, s.text FROM strings_search f JOIN strings s ON s.id = f.rowid
         WHERE strings_search MATCH ? LIMIT ${maxEntriesPerPiece * 8}`,
      )
      .raw(),
    prefixes: db.prepare(`SELECT id, text FROM strings WHERE kind = ${stringKind.resourcePrefix} AND id > ? ORDER BY id`).raw(),
    // Through the (kind, text) index: as many entries as there are starts.
    prefixCount: db.prepare(`SELECT count(*) FROM strings WHERE kind = ${stringKind.resourcePrefix}`).pluck(),
  };
  // The resources' constant starts (stored-record.ts resourceParts), read as they are added. An entry's
  // text never changes while it is a start; Delete and retention blank the ones no row uses any more
  // (their kind changes), and then this copy is read again, so an erased text is not kept here.
  const prefixes = new Map<number, string>();
  let prefixesUpTo = 0;

  // The entries of the pieces of the pattern being planned (each form asks).
  const entriesOfPiece = new Map<string, [id: number, kind: number][] | undefined>();

  /** The referrer and user agent entries a piece is in, or undefined when there are too many to name. */
  function entriesOf(p: string): [id: number, kind: number][] | undefined {
    if (entriesOfPiece.has(p)) return entriesOfPiece.get(p);
    const entries = lookUpEntries(p);
    entriesOfPiece.set(p, entries);
    return entries;
  }

  function lookUpEntries(p: string): [id: number, kind: number][] | undefined {
    const found = stmt.entries.all(trigramsOf(p).map(ftsString).join(" AND ")) as [number, number, string][];
    if (found.length >= maxEntriesPerPiece * 8) return undefined;
    const entries = found.filter(([, , text]) => text.includes(p)).map(([id, kind]): [number, number] => [id, kind]);
    return entries.length > maxEntriesPerPiece ? undefined : entries;
  }

  /**
   * An SQL test every row whose resource contains `p` passes: in the rest
   * of the resource, inside its start (a start that contains it), or across
   * the two (a start ending with the head of `p`, a rest beginning with its
   * tail). Too many starts to name make a looser test.
   */
  function resourceTest(p: string): string {
    const keys = (match: (start: string) => boolean) => {
      const found: number[] = [];
      for (const [id, text] of prefixes) if (match(text)) found.push(id);
      if (found.length === 0) return undefined;
      return found.length > 500 ? "r.resource_prefix IS NOT NULL" : `r.resource_prefix IN (${found.join(", ")})`;
    };
    const tests = [`instr(r.resource, ${sqlText(p)})`];
    const inside = keys((start) => start.includes(p));
    if (inside) tests.push(inside);
    const cps = Array.from(p);
    for (let k = 1; k < cps.length; k++) {
      const head = cps.slice(0, k).join("");
      const across = keys((start) => start.endsWith(head));
      if (across) tests.push(`(substr(r.resource, 1, ${cps.length - k}) = ${sqlText(cps.slice(k).join(""))} AND ${across})`);
    }
    return tests.join(" OR ");
  }

  /** What the index (fts) or a row's columns (sql) must have when the line contains the piece `p`. */
  function piece(p: string, form: "fts" | "sql", methods: readonly string[] | undefined, stop: StopGrams): Cond {
    if (unindexablePiece(p)) return yes;
    // Methods and HTTP versions are few and in every line: not worth an index entry.
    if (!methods || methods.some((m) => m.includes(p))) return yes;
    const entries = entriesOf(p);
    if (!entries) return yes;
    if (form === "fts") {
      // Its trigrams, unless all are too common to be indexed (then it may lie in any resource).
      const grams = gramsOf(p, stop);
      if (grams.length === 0) return yes;
      const terms = [`(${grams.map((g) => ftsString(gramToken(g))).join(" AND ")})`, ...entries.map(([id]) => ftsString(entryToken(id)))];
      return { kind: "test", test: `(${terms.join(" OR ")})` };
    }
    const text = sqlText(p);
    const keys = (kind: number) => entries.filter(([, k]) => k === kind).map(([id]) => id);
    const ip = /^[0-9.]+$/.test(p) ? `instr(${ipTextSql}, ${text})` : `(typeof(r.ip) = 'text' AND instr(r.ip, ${text}))`;
    // Cheapest first: SQLite stops at the first test that holds.
    const derived: string[] = [];
    if (keys(stringKind.referrer).length > 0) derived.push(`r.referrer IN (${keys(stringKind.referrer).join(", ")})`);
    if (keys(stringKind.userAgent).length > 0) derived.push(`r.user_agent IN (${keys(stringKind.userAgent).join(", ")})`);
    derived.push(resourceTest(p), `instr(r.nickname, ${text})`, ip);
    return { kind: "test", test: `(CASE WHEN r.combined IS NULL THEN (${derived.join(" OR ")}) ELSE instr(r.combined, ${text}) END)` };
  }

  function condOf(query: StringQuery, form: "fts" | "sql", methods: readonly string[] | undefined, stop: StopGrams): Cond {
    switch (query.op) {
      case "all":
        return yes;
      case "none":
        return no;
      case "has":
        return join("and", linePieces(query.s).map((p) => piece(p, form, methods, stop)));
      case "and":
      case "or":
        return join(query.op, query.args.map((q) => condOf(q, form, methods, stop)));
    }
  }

  const render = (c: Cond, form: "fts" | "sql"): string | undefined => {
    switch (c.kind) {
      case "true":
        return undefined;
      case "false":
        return form === "sql" ? "0" : undefined;
      case "test":
        return c.test;
      case "and":
      case "or":
        return `(${c.args.map((a) => render(a, form)).join(form === "fts" ? ` ${c.kind.toUpperCase()} ` : ` ${c.kind} `)})`;
    }
  };

  return {
    plan(pattern: string): SearchPlan {
      entriesOfPiece.clear();
      for (const [id, text] of stmt.prefixes.all(prefixesUpTo) as [number, string][]) {
        prefixes.set(id, text);
        prefixesUpTo = id;
      }
      if (stmt.prefixCount.get() !== prefixes.size) {
        prefixes.clear();
        for (const [id, text] of stmt.prefixes.all(0) as [number, string][]) prefixes.set(id, text);
      }
      const list = stmt.smallKinds.all() as string[];
      const methods = list.length > 1000 ? undefined : list;
      const query = requiredStrings(pattern);
      const fts = condOf(query, "fts", methods, stopGrams());
      if (fts.kind === "false") return { none: true, prefilter: () => "0" };
      // The scans' prefilter is made only for a scan: candidates go to RE2 as they are.
      let prefilter: { sql: string | undefined } | undefined;
      return {
        match: render(fts, "fts"),
        prefilter: () => (prefilter ??= { sql: render(condOf(query, "sql", methods, stopGrams()), "sql") }).sql,
        none: false,
      };
    },
    startsHeld: () => prefixes.values(),
  };
}

export interface SearchPlanner {
  plan(pattern: string): SearchPlan;
  /** The resource starts it holds, as of its last plan (none that Delete or retention blanked). */
  startsHeld(): Iterable<string>;
}

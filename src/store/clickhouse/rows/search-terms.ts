/**
 * The terms a request version is indexed under for regex Reads (migration
 * 005, docs/search-index.md "On ClickHouse"): not the trigrams of its line
 * (77 postings a request on forge traffic, 785 B a request in ClickHouse
 * without delta codecs, ~140 B with stop grams: more than a whole request),
 * but a few values, most of them shared by many requests:
 *
 * - the **start** of its resource, up to its first id (a run of letters and
 *   digits with a digit in it, other than a version like v1):
 *   `/api/v1/repos/alice/app/actions/artifacts/` of `…/artifacts/48213/zip`;
 * - each **token** of the rest (each run of letters and digits): `48213`, `zip`;
 * - its **referrer** and **user agent**, whole;
 * - **stored**: its combined line is stored whole (not derived), so a piece
 *   may lie anywhere in it.
 *
 * Methods and HTTP versions are kept in the dictionary only (a piece that
 * may lie in one narrows nothing: they are in every line). The dictionary
 * (`search_terms`) holds each value's text (but a token's: it is found by
 * its key) and how many versions it was indexed for; a search finds the
 * values containing a piece there, then reads the postings of their keys.
 *
 * Computed by ClickHouse in the insert's views (any server's insert indexes
 * what it stores), with functions 18.16 has.
 */

/** What kind of value a term is: part of its key. */
export const termKind = {
  start: 1,
  referrer: 2,
  userAgent: 3,
  token: 4,
  stored: 5,
  method: 6,
  httpVersion: 7,
} as const;

/** Kinds with postings (the others are in the dictionary only). */
export const postedKinds = [termKind.start, termKind.referrer, termKind.userAgent, termKind.token, termKind.stored];

const allKinds = Object.values(termKind);

/** The one text of the `stored` term. */
export const storedTerm = "stored";

/** A term's key in SQL: the same for the same kind and text, on every server. */
export const termKeySql = (kind: string, text: string) => `cityHash64(${kind}, ${text})`;

/** A run of letters and digits (a token) or of anything else, in RE2 for extractAll. */
const runs = "'[0-9A-Za-z]+|[^0-9A-Za-z]+'";
/** Whether a run is an id: letters and digits with a digit, not a version (v1). */
const isIdSql = (run: string) => `(match(${run}, '^[0-9A-Za-z]*[0-9]') AND NOT match(${run}, '^v[0-9]+$'))`;

/**
 * The terms of each row of `source` (request_changes, or requests when a
 * migration fills the index), tombstones left out: as `postings`, one
 * row (app, day of its creation: the partition, key, sort_time) a term
 * with postings; as `terms`, the dictionary's rows (app, kind, key, text,
 * n: how many of the source's rows have it).
 */
export function termsSql(source: string, rows: "postings" | "terms"): string {
  // One level, no subquery: 18.16 loses the aliases of a subquery of a
  // materialized view's SELECT ("Unknown identifier") when it runs on an
  // inserted block. Aliases are the query's, defined where first used (the
  // ARRAY JOIN), so the SELECT may group.
  const runsOf = `(extractAll(resource, ${runs}) AS resource_runs)`;
  const firstId = `(arrayFirstIndex(r -> ${isIdSql("r")}, ${runsOf}) AS first_id)`;
  const rest = `(if(${firstId} = 0, emptyArrayString(), arrayFilter(r -> match(r, '^[0-9A-Za-z]'), arraySlice(resource_runs, first_id))) AS rest_tokens)`;
  const key = termKeySql("kind", "term");
  const select =
    rows === "postings"
      ? `app, toUInt32(intDiv(created_at, 86400000000)) AS day, ${key} AS key, sort_time`
      : `app, kind, ${key} AS key, any(if(kind = ${termKind.stored}, '', term)) AS text, toInt64(count()) AS n`;
  const kinds = rows === "postings" ? postedKinds : allKinds;
  return `
    SELECT ${select}
    FROM ${source}
    ARRAY JOIN
      arrayConcat(
        arrayMap(t -> toUInt8(${termKind.token}), ${rest}),
        [toUInt8(${termKind.start}), toUInt8(${termKind.referrer}), toUInt8(${termKind.userAgent}), toUInt8(${termKind.stored}),
         toUInt8(${termKind.method}), toUInt8(${termKind.httpVersion})]) AS kind,
      arrayConcat(
        rest_tokens,
        [arrayStringConcat(if(first_id = 0, resource_runs, arraySlice(resource_runs, 1, first_id - 1))), referrer, user_agent,
         if(combined != '', '${storedTerm}', ''), method, http_version]) AS term
    WHERE deleted = 0 AND term != '' AND kind IN (${kinds.join(", ")})${rows === "terms" ? " GROUP BY app, kind, key" : ""}`;
}

const isId = (run: string) => /\d/.test(run) && !/^v\d+$/.test(run);

/**
 * A run of letters and digits in a piece, and which tokens of a resource's
 * rest it may be part of: the token itself when other characters bound it
 * on both sides within the piece (then it is a whole run of the resource
 * too), else a token ending with it (the piece starts inside it), starting
 * with it (the piece ends inside it), or containing it (both).
 */
export interface PieceRun {
  at: number;
  text: string;
  token: "equals" | "endsWith" | "startsWith" | "contains";
}

function runsOf(piece: string): PieceRun[] {
  const found: PieceRun[] = [];
  for (const m of piece.matchAll(/[0-9A-Za-z]+/g)) {
    const left = m.index > 0;
    const right = m.index + m[0].length < piece.length;
    found.push({ at: m.index, text: m[0], token: left ? (right ? "equals" : "startsWith") : right ? "endsWith" : "contains" });
  }
  return found;
}

/**
 * Where a piece may lie in a resource: inside its start; across the
 * start's end (a start ending with `head`, then tokens of the rest, one for
 * each of `runs`); or inside the rest (`runs`: tokens of the rest, one for
 * each run of the piece; none when the piece has no letter or digit, which
 * the tokens cannot narrow).
 */
export function resourcePlaces(piece: string): { splits: { head: string; runs: PieceRun[] }[]; runs: PieceRun[] } {
  const all = runsOf(piece);
  const splits: { head: string; runs: PieceRun[] }[] = [];
  for (const run of all) {
    // The start ends before an id: other characters before it, and the run
    // (when the piece shows all of it) an id. (Runs after the first are
    // always preceded by other characters: each is a whole run on its left.)
    if (run.at === 0) continue;
    if (run.token === "equals" && !isId(run.text)) continue;
    splits.push({ head: piece.slice(0, run.at), runs: all.filter((r) => r.at >= run.at) });
  }
  return { splits, runs: all };
}

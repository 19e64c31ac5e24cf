import { linePieces, unindexablePiece } from "../../../query/line-pieces.js";
import { requiredStrings, type StringQuery } from "../../../query/required-strings.js";
import { type PieceRun, resourcePlaces, termKeySql, termKind } from "../rows/search-terms.js";
import { sqlInt, sqlList, sqlString } from "../rows/sql-literal.js";
import type { SqlClient } from "../sql-client.js";

/**
 * A regex Read's use of the search index on ClickHouse (migration 006,
 * rows/search-terms.ts): which postings every request whose combined line
 * may match the pattern is under. The strings every match contains
 * (required-strings.ts) are cut into pieces at the line's separators; a
 * piece of three characters or more that cannot lie in the time, the fixed
 * parts, a number, a method, an HTTP version or an ip lies in the resource
 * (inside its start, across its end, or in the rest, whose whole tokens are
 * terms), the referrer or user agent, or a line stored whole. The values
 * holding it are found in the dictionary (`search_terms`, small: values
 * shared by many requests); the keys to read are chosen by their counts:
 * of an AND, the cheapest part; of an OR, every part. RE2 (match()) still
 * decides every candidate: the index only narrows.
 */
export interface SearchKeys {
  /** Every request the pattern may match is under one of these keys (ClickHouse's UInt64, as text); empty: none is. */
  keys: string[];
  /** How many postings they have in all (an upper bound: expired and replaced versions count). */
  postings: number;
}

/** A value set named by the dictionary: the values of `kinds` whose text contains `text` (starts or ends with it), or all of them. */
interface Lookup {
  kinds: readonly number[];
  test: "contains" | "startsWith" | "endsWith" | "any";
  text: string;
}

type Need =
  | { op: "yes" }
  | { op: "no" }
  | { op: "values"; lookup: number }
  /** Nothing can be narrowed if the lookup finds a value (a piece that may lie in a method or HTTP version). */
  | { op: "unlessFound"; lookup: number }
  | { op: "token"; token: string }
  | { op: "and" | "or"; args: Need[] };

const yes: Need = { op: "yes" };
const no: Need = { op: "no" };

/** Keys of one lookup beyond this make it read as "anything" (an IN list is not an index). */
const maxKeysPerLookup = 1000;

/** An ip's characters: a piece of them alone may lie in one, which is not indexed. */
const ipText = /^[0-9A-Fa-f.:]+$/;

/** What a cost evaluation finds: the keys to read and their postings, or anything (Infinity). */
interface Reading {
  cost: number;
  keys: Set<string>;
}

export function createSearchIndex(sql: SqlClient) {
  /** The needs of a pattern, with the dictionary lookups and tokens they ask for. */
  function needsOf(query: StringQuery) {
    const lookups: Lookup[] = [];
    const lookupIds = new Map<string, number>();
    const tokens = new Set<string>();
    const lookup = (l: Lookup) => {
      const key = JSON.stringify(l);
      let id = lookupIds.get(key);
      if (id === undefined) lookupIds.set(key, (id = lookups.push(l) - 1));
      return id;
    };
    /** A piece's runs in tokens of a resource's rest: a token for each (whole ones by key, the others looked up). */
    const inRest = (runs: readonly PieceRun[]): Need => {
      if (runs.length === 0) return yes;
      return {
        op: "and",
        args: runs.map((r): Need => {
          if (r.token !== "equals") return { op: "values", lookup: lookup({ kinds: [termKind.token], test: r.token, text: r.text }) };
          tokens.add(r.text);
          return { op: "token", token: r.text };
        }),
      };
    };
    const piece = (p: string): Need => {
      if (unindexablePiece(p) || ipText.test(p)) return yes;
      const places = resourcePlaces(p);
      return {
        op: "or",
        args: [
          { op: "unlessFound", lookup: lookup({ kinds: [termKind.method, termKind.httpVersion], test: "contains", text: p }) },
          { op: "values", lookup: lookup({ kinds: [termKind.start], test: "contains", text: p }) },
          ...places.splits.map((s): Need => ({
            op: "and",
            args: [{ op: "values", lookup: lookup({ kinds: [termKind.start], test: "endsWith", text: s.head }) }, inRest(s.runs)],
          })),
          inRest(places.runs),
          { op: "values", lookup: lookup({ kinds: [termKind.referrer, termKind.userAgent], test: "contains", text: p }) },
          { op: "values", lookup: lookup({ kinds: [termKind.stored], test: "any", text: "" }) },
        ],
      };
    };
    const walk = (q: StringQuery): Need => {
      switch (q.op) {
        case "all":
          return yes;
        case "none":
          return no;
        case "has":
          return { op: "and", args: linePieces(q.s).map(piece) };
        case "and":
        case "or":
          return { op: q.op, args: q.args.map(walk) };
      }
    };
    return { need: walk(query), lookups, tokens: [...tokens] };
  }

  /** Each lookup's keys (at most maxKeysPerLookup + 1) and their postings, in one pass over the app's shared values. */
  async function lookUp(app: string, lookups: readonly Lookup[], signal: AbortSignal) {
    if (lookups.length === 0) return [];
    const test = (l: Lookup) => {
      const kinds = `kind IN ${sqlList(l.kinds.map((k) => sqlInt(k)))}`;
      if (l.test === "any") return kinds;
      const text = sqlString(l.text);
      return `${kinds} AND ${l.test === "contains" ? `position(text, ${text}) > 0` : `${l.test}(text, ${text})`}`;
    };
    const kinds = [...new Set(lookups.flatMap((l) => l.kinds))];
    const columns = lookups.map((l, i) => `groupArrayIf(${maxKeysPerLookup + 1})(toString(key), ${test(l)}) AS k${i}, sumIf(n, ${test(l)}) AS n${i}`);
    const [row] = await sql.rows<Record<string, string[] | string>>(
      `SELECT ${columns.join(", ")} FROM (
         SELECT kind, key, any(text) AS text, sum(n) AS n FROM search_terms
         WHERE app = ${sqlString(app)} AND kind IN ${sqlList(kinds.map((k) => sqlInt(k)))} GROUP BY kind, key)`,
      signal,
    );
    return lookups.map((_, i) => ({ keys: row![`k${i}`] as string[], postings: Number(row![`n${i}`]) }));
  }

  /** The tokens' keys and postings (absent: never indexed, so in no request). */
  async function tokenCounts(app: string, tokens: readonly string[], signal: AbortSignal) {
    const counts = new Map<string, { key: string; postings: number }>();
    if (tokens.length === 0) return counts;
    const keyOf = (t: string) => termKeySql(`toUInt8(${termKind.token})`, sqlString(t));
    const rows = await sql.rows<{ token: string; key: string; n: string }>(
      `SELECT token, toString(k) AS key, n FROM
         (SELECT arrayJoin(${`[${tokens.map((t) => `(${sqlString(t)}, ${keyOf(t)})`).join(", ")}]`}) AS tk, tupleElement(tk, 1) AS token, tupleElement(tk, 2) AS k)
       ANY INNER JOIN
         (SELECT key AS k, sum(n) AS n FROM search_terms
          WHERE app = ${sqlString(app)} AND kind = ${sqlInt(termKind.token)} AND key IN ${sqlList(tokens.map(keyOf))} GROUP BY k)
       USING k`,
      signal,
    );
    for (const r of rows) counts.set(r.token, { key: r.key, postings: Number(r.n) });
    return counts;
  }

  return {
    /**
     * The postings keys that narrow a combined_log_regex, or undefined when
     * the index cannot narrow it below `limit` postings (a scan answers).
     */
    async keysOf(app: string, pattern: string, limit: number, signal: AbortSignal): Promise<SearchKeys | undefined> {
      const { need, lookups, tokens } = needsOf(requiredStrings(pattern));
      if (need.op === "yes") return undefined;
      const [found, counted] = await Promise.all([lookUp(app, lookups, signal), tokenCounts(app, tokens, signal)]);
      const nothing: Reading = { cost: 0, keys: new Set() };
      const anything: Reading = { cost: Infinity, keys: new Set() };
      const evaluate = (n: Need): Reading => {
        switch (n.op) {
          case "yes":
            return anything;
          case "no":
            return nothing;
          case "values": {
            const { keys, postings } = found[n.lookup]!;
            return keys.length > maxKeysPerLookup ? anything : { cost: postings, keys: new Set(keys) };
          }
          case "unlessFound":
            return found[n.lookup]!.keys.length > 0 ? anything : nothing;
          case "token": {
            const t = counted.get(n.token);
            return t ? { cost: t.postings, keys: new Set([t.key]) } : nothing;
          }
          case "and": {
            // Any part narrows: read the cheapest (RE2 checks the others).
            let best = anything;
            for (const part of n.args.map(evaluate)) if (part.cost < best.cost) best = part;
            return best;
          }
          case "or": {
            const parts = n.args.map(evaluate);
            if (parts.some((p) => p.cost === Infinity)) return anything;
            return { cost: parts.reduce((s, p) => s + p.cost, 0), keys: new Set(parts.flatMap((p) => [...p.keys])) };
          }
        }
      };
      const reading = evaluate(need);
      if (reading.cost > limit) return undefined;
      return { keys: [...reading.keys], postings: reading.cost };
    },
  };
}

export type SearchIndex = ReturnType<typeof createSearchIndex>;

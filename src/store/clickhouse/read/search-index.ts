import { linePieces, unindexablePiece } from "../../../query/line-pieces.js";
import { requiredStrings, type StringQuery } from "../../../query/required-strings.js";
import { type PieceRun, resourcePlaces, termKeySql, termKind } from "../rows/search-terms.js";
import { sqlInt, sqlList, sqlString } from "../rows/sql-literal.js";
import type { SqlClient } from "../sql-client.js";

/**
 * A regex Read's use of the search index on ClickHouse (migration 005,
 * rows/search-terms.ts): which postings every request whose combined line
 * may match the pattern is under. The strings every match contains
 * (required-strings.ts) are cut into pieces at the line's separators; a
 * piece of three characters or more that cannot lie in the time, the fixed
 * parts, a number, a method, an HTTP version or an ip lies in the resource
 * (inside its start, across its end, or in the rest, whose whole tokens are
 * terms), the referrer or user agent, or a line stored whole. The values
 * holding it are found in the dictionary (`search_terms`, small: values
 * shared by many requests); the keys to read are chosen by their counts:
 * of an AND, the cheapest part; of an OR, every part. The parts of the
 * pattern's top AND (its pieces, and the strings every match contains)
 * each hold at the latest version's sort time of every request that
 * matches: besides the cheapest, those cheap to read beside it (`alsoUnder`)
 * narrow the candidates to the sort times under all of them. RE2 (match()) still
 * decides every candidate: the index only narrows.
 */
export interface SearchKeys {
  /** Every request the pattern may match is under one of these keys (ClickHouse's UInt64, as text); empty: none is. */
  keys: string[];
  /**
   * More key sets, each of which every request the pattern may match is
   * under too, at the same sort time (its latest version's): a candidate's
   * sort time has a posting under `keys` and under each of these.
   */
  alsoUnder: string[][];
}

/**
 * A value set named by the dictionary: the values of `kinds` whose text
 * contains `text` (starts or ends with it, or is it: found by its key), or
 * all of them.
 */
interface Lookup {
  kinds: readonly number[];
  test: "contains" | "startsWith" | "endsWith" | "is" | "any";
  text: string;
}

type Need =
  | { op: "yes" }
  | { op: "no" }
  | { op: "values"; lookup: number }
  /** Nothing can be narrowed if the lookup finds a value (a piece that may lie in a method or HTTP version). */
  | { op: "unlessFound"; lookup: number }
  | { op: "and" | "or"; args: Need[] };

const yes: Need = { op: "yes" };
const no: Need = { op: "no" };

/** Keys of one lookup beyond this make it read as "anything" (an IN list is not an index). */
const maxKeysPerLookup = 1000;

/**
 * Candidates (sort times, newest first) a regex Read checks per round
 * (snapshot-paging.ts): a selective pattern's all fit in one; a page full
 * of matches stops early. Each round reads the postings of every set again.
 */
export const candidatesPerRound = 2_000;

/**
 * What intersecting a key set (alsoUnder) with the cheapest costs, in
 * granules of `search_postings` read: about one a key (keys are hashes:
 * scattered) and one every 8,192 postings. A candidate it leaves out spares
 * a granule of every column of `requests`, about ten times as much (at
 * 300,000 forge requests, load 5: 80 keys cost 72 ms, 10 candidates 46).
 * Sets are intersected while all of them cost at most one granule a
 * candidate of the cheapest in a round: at 300,000 requests the 80
 * keys of a referrer's prefix cost more than the 8 candidates of 10 they
 * left out (128 ms against 56); one key of 3,745 postings took a Read of
 * 367 candidates to 2 in half the time (docs/benchmarks.md).
 */
const postingsGranule = 8192;
const intersectionCost = (keys: number, postings: number) => keys + Math.ceil(postings / postingsGranule);

/** An ip's characters: a piece of them alone may lie in one, which is not indexed. */
const ipText = /^[0-9A-Fa-f.:]+$/;

/**
 * The usual methods and HTTP versions. A piece inside one of them most
 * likely lies in a method or version the app's dictionary has, and then it
 * narrows nothing (`unlessFound`); asked anyway, its other places (a token
 * containing `GET`) read every token of the app's dictionary: millions at
 * 10M requests (ids, signatures). Taking it as "anywhere" at once only
 * narrows less in an app that never had that method.
 */
const usualMethodsAndVersions = ["CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE", "HTTP/0.9", "HTTP/1.0", "HTTP/1.1", "HTTP/2.0", "HTTP/3.0"];
const inUsualMethodOrVersion = (piece: string) => usualMethodsAndVersions.some((m) => m.includes(piece));

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
    const lookup = (l: Lookup) => {
      const key = JSON.stringify(l);
      let id = lookupIds.get(key);
      if (id === undefined) lookupIds.set(key, (id = lookups.push(l) - 1));
      return id;
    };
    /**
     * A piece's runs in tokens of a resource's rest: a token for each. Whole
     * ones are found by key; when there are any, the others are left out
     * (an AND reads one part anyway, and looking a partial run up reads
     * every token of the app's dictionary: millions of ids and signatures).
     */
    const inRest = (all: readonly PieceRun[]): Need => {
      if (all.length === 0) return yes;
      const whole = all.filter((r) => r.token === "equals");
      const runs = whole.length > 0 ? whole : all;
      return {
        op: "and",
        args: runs.map((r): Need => ({
          op: "values",
          lookup: lookup({ kinds: [termKind.token], test: r.token === "equals" ? "is" : r.token, text: r.text }),
        })),
      };
    };
    const piece = (p: string): Need => {
      if (unindexablePiece(p) || ipText.test(p) || inUsualMethodOrVersion(p)) return yes;
      const places = resourcePlaces(p);
      return {
        op: "or",
        args: [
          { op: "unlessFound", lookup: lookup({ kinds: [termKind.method, termKind.httpVersion], test: "contains", text: p }) },
          { op: "values", lookup: lookup({ kinds: [termKind.start], test: "contains", text: p }) },
          // (Across the start's end: the start's part always narrows, so the
          // rest's part is asked only for whole tokens.)
          ...places.splits.map((s): Need => ({
            op: "and",
            args: [
              { op: "values", lookup: lookup({ kinds: [termKind.start], test: "endsWith", text: s.head }) },
              inRest(s.runs.filter((r) => r.token === "equals")),
            ],
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
    return { need: walk(query), lookups };
  }

  /** Each lookup's keys (at most maxKeysPerLookup + 1) and their postings, in one pass over the app's shared values. */
  async function lookUp(app: string, lookups: readonly Lookup[], signal: AbortSignal) {
    if (lookups.length === 0) return [];
    /** The lookup's test of an entry whose text is `column`. */
    const test = (l: Lookup, column = "value") => {
      const kinds = `kind IN ${sqlList(l.kinds.map((k) => sqlInt(k)))}`;
      const text = sqlString(l.text);
      switch (l.test) {
        case "any":
          return kinds;
        case "is":
          return `${kinds} AND key = ${termKeySql(`toUInt8(${l.kinds[0]!})`, text)}`;
        case "contains":
          return `${kinds} AND position(${column}, ${text}) > 0`;
        default:
          return `${kinds} AND ${l.test}(${column}, ${text})`;
      }
    };
    // Tokens are too many to read through: only those found by key, unless a
    // lookup wants their text. Two parts of one statement (UNION ALL: 18.16
    // reads them side by side): the entries of the kinds a lookup reads
    // through (kind in PREWHERE, so that their texts are tested only on
    // their rows), and the tokens found by key (none of those kinds, so
    // that no entry comes twice); only the entries some lookup wants are
    // summed, then each lookup takes its own.
    const kinds = [...new Set(lookups.flatMap((l) => (l.test === "is" ? [] : l.kinds)))];
    const byKey = lookups.filter((l) => l.test === "is" && !l.kinds.some((k) => kinds.includes(k)));
    const ofApp = `app = ${sqlString(app)}`;
    const parts = [
      ...(kinds.length > 0
        ? [`SELECT kind, key, any(text) AS value, sum(n) AS n FROM search_terms
            PREWHERE ${ofApp} AND kind IN ${sqlList(kinds.map((k) => sqlInt(k)))}
            WHERE ${lookups.filter((l) => l.kinds.some((k) => kinds.includes(k))).map((l) => `(${test(l, "text")})`).join(" OR ")}
            GROUP BY kind, key`]
        : []),
      ...(byKey.length > 0
        ? [`SELECT kind, key, '' AS value, sum(n) AS n FROM search_terms
            WHERE ${ofApp} AND (${byKey.map((l) => `(${test(l)})`).join(" OR ")})
            GROUP BY kind, key`]
        : []),
    ];
    const columns = lookups.map((l, i) => `groupArrayIf(${maxKeysPerLookup + 1})(toString(key), ${test(l)}) AS k${i}, sumIf(n, ${test(l)}) AS n${i}`);
    const [row] = await sql.rows<Record<string, string[] | string>>(`SELECT ${columns.join(", ")} FROM (${parts.join(" UNION ALL ")})`, signal);
    return lookups.map((_, i) => ({ keys: row![`k${i}`] as string[], postings: Number(row![`n${i}`]) }));
  }

  return {
    /**
     * The postings keys that narrow a combined_log_regex, or undefined when
     * the index cannot narrow it below `limit` postings (a scan answers).
     */
    async keysOf(app: string, pattern: string, limit: number, signal: AbortSignal): Promise<SearchKeys | undefined> {
      const { need, lookups } = needsOf(requiredStrings(pattern));
      if (need.op === "yes") return undefined;
      const found = await lookUp(app, lookups, signal);
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
      // The top AND's parts (nested ANDs flattened), each evaluated as above:
      // the cheapest is read, the others that cost less to read than its
      // candidates narrow it.
      const conjuncts = (n: Need): Need[] => (n.op === "and" ? n.args.flatMap(conjuncts) : [n]);
      const parts = conjuncts(need)
        .map(evaluate)
        .filter((r) => r.cost !== Infinity)
        .sort((a, b) => a.cost - b.cost);
      const reading = parts[0] ?? anything;
      if (reading.cost > limit) return undefined;
      const alsoUnder: string[][] = [];
      let spent = 0;
      for (const part of parts.slice(1)) {
        if (reading.keys.size === 0) break;
        // (A part whose keys hold the cheapest's narrows nothing.)
        if ([...reading.keys].every((k) => part.keys.has(k))) continue;
        const cost = intersectionCost(part.keys.size, part.cost);
        if (spent + cost > Math.min(reading.cost, candidatesPerRound)) continue;
        spent += cost;
        alsoUnder.push([...part.keys]);
      }
      return { keys: [...reading.keys], alsoUnder };
    },
  };
}

export type SearchIndex = ReturnType<typeof createSearchIndex>;

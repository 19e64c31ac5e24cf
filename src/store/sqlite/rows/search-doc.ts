import type Database from "better-sqlite3";
import { createStopGramsWriter, type StopGramRule, type StopGrams } from "./stop-grams.js";
import { fieldColumns, ipFromSql } from "./stored-record.js";

/** The stored columns a request's search document is made from (and its row id). */
export interface SearchDocColumns {
  id: bigint;
  ip: unknown;
  nickname: string | null;
  resource: string;
  combined: string | null;
  referrer_key: number | bigint | null;
  user_agent_key: number | bigint | null;
}

/** The document columns among a record's values (stored-record.ts recordValues) of `resource`, for row `id`. */
export function docColumnsOf(id: bigint, values: readonly unknown[], resource: string): SearchDocColumns {
  const at = (column: (typeof fieldColumns)[number]) => values[fieldColumns.indexOf(column)];
  return {
    id,
    ip: at("ip"),
    nickname: at("nickname") as string | null,
    resource,
    combined: at("combined") as string | null,
    referrer_key: at("referrer") as number | null,
    user_agent_key: at("user_agent") as number | null,
  };
}

/** Adds the distinct trigrams (three characters, code points) of `text` to `grams`. */
function addTrigrams(text: string, grams: Set<string>): void {
  // Most text is ASCII: slices of the string are its trigrams.
  if (!/[^\x00-\x7f]/.test(text)) {
    for (let i = 0; i + 3 <= text.length; i++) grams.add(text.slice(i, i + 3));
    return;
  }
  const cps = Array.from(text);
  for (let i = 0; i + 3 <= cps.length; i++) grams.add(cps[i]! + cps[i + 1]! + cps[i + 2]!);
}

/** The distinct trigrams (three characters, code points) of a text. */
export function trigramsOf(text: string): string[] {
  const grams = new Set<string>();
  addTrigrams(text, grams);
  return [...grams];
}

const hexDigits = Array.from({ length: 128 }, (_, c) => c.toString(16).padStart(2, "0"));

/** A trigram's token in the index: the hex of its UTF-8 bytes (one word to FTS5's ascii tokenizer). */
export function gramToken(gram: string): string {
  if (gram.length === 3) {
    const a = gram.charCodeAt(0);
    const b = gram.charCodeAt(1);
    const c = gram.charCodeAt(2);
    if (a < 128 && b < 128 && c < 128) return hexDigits[a]! + hexDigits[b]! + hexDigits[c]!;
  }
  return Buffer.from(gram, "utf8").toString("hex");
}

/** The token that stands for a string entry (strings.ts) in the index; no gram token starts with "s". */
export const entryToken = (key: number | bigint) => `s${key.toString(16)}`;

/**
 * A request's document in the search index (request_search, FTS5,
 * contentless): what a combined line's pieces can be looked up by. A line
 * kept whole (`combined` stored) is indexed by its trigrams. A derived line
 * is indexed by the trigrams of the fields that vary, ip, nickname and
 * resource, and by the token of its referrer's and user agent's string
 * entries (whose texts `strings_search` indexes once). The time, method,
 * HTTP version, status and size are not indexed: a piece of a pattern that
 * may lie in them requires nothing of the index (search-query.ts), and
 * neither are the stop grams of the row's id (stop-grams.ts).
 *
 * Returns the document's tokens, and the trigrams its text has.
 */
export function searchDoc(row: SearchDocColumns, stop: StopGrams): { tokens: string; grams: string[] } {
  const set = new Set<string>();
  if (row.combined !== null) addTrigrams(row.combined, set);
  else for (const text of [ipFromSql(row.ip), row.nickname ?? "", row.resource]) addTrigrams(text, set);
  const grams = [...set];
  const tokens: string[] = [];
  for (const gram of grams) if (!stop.stopped(gram, row.id)) tokens.push(gramToken(gram));
  if (row.combined === null) {
    if (row.referrer_key !== null) tokens.push(entryToken(row.referrer_key));
    if (row.user_agent_key !== null) tokens.push(entryToken(row.user_agent_key));
  }
  return { tokens: tokens.join(" "), grams };
}

/**
 * The search index as writes keep it, inside their transaction: a row's
 * document added, replaced or removed (a contentless index takes a document
 * out when given the same tokens again, which searchDoc gives for the same
 * columns and id). `forget` after a write or a group that did not commit.
 */
export function createSearchIndex(db: Database.Database, stopGrams?: StopGramRule): SearchIndex {
  const stop = createStopGramsWriter(db, stopGrams);
  const stmt = {
    insert: db.prepare("INSERT INTO request_search (rowid, doc) VALUES (?, ?)"),
    remove: db.prepare("INSERT INTO request_search (request_search, rowid, doc) VALUES ('delete', ?, ?)"),
  };

  return {
    /**
     * Indexes a row new to the index, and counts its grams for the stop
     * grams, which may then stop some for rows from `nextId` on (above
     * every row id given out so far).
     */
    add(row: SearchDocColumns, nextId: bigint): void {
      const doc = searchDoc(row, stop.current());
      stmt.insert.run(row.id, doc.tokens);
      stop.observe(doc.grams, nextId);
    },
    /** Indexes a row's new columns in place of its old ones (nothing to do when the document is the same). */
    replace(old: SearchDocColumns, now: SearchDocColumns): void {
      const current = stop.current();
      const before = searchDoc(old, current).tokens;
      const after = searchDoc(now, current).tokens;
      if (before === after) return;
      stmt.remove.run(old.id, before);
      stmt.insert.run(now.id, after);
    },
    remove(row: SearchDocColumns): void {
      stmt.remove.run(row.id, searchDoc(row, stop.current()).tokens);
    },
    forget: stop.forget,
  };
}

export interface SearchIndex {
  /**
   * Indexes a row new to the index, and counts its grams for the stop
   * grams, which may then stop some for rows from `nextId` on (above
   * every row id given out so far).
   */
  add(row: SearchDocColumns, nextId: bigint): void;
  /** Indexes a row's new columns in place of its old ones (nothing to do when the document is the same). */
  replace(old: SearchDocColumns, now: SearchDocColumns): void;
  remove(row: SearchDocColumns): void;
  forget(): void;
}

import type Database from "better-sqlite3";
import { createStopGramsWriter, type StopGramRule, type StopGrams } from "./stop-grams.js";
import { fieldColumns, ipFromSql } from "./stored-record.js";
import { searchIndexedSql } from "./sql.js";
import type { Strings } from "./strings.js";
import { type DistinctGrams, distinctGrams, gramToken, writeAsciiGramToken } from "./trigram.js";

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
const at = {
  ip: fieldColumns.indexOf("ip"),
  nickname: fieldColumns.indexOf("nickname"),
  combined: fieldColumns.indexOf("combined"),
  referrer: fieldColumns.indexOf("referrer"),
  userAgent: fieldColumns.indexOf("user_agent"),
};
export function docColumnsOf(id: bigint, values: readonly unknown[], resource: string): SearchDocColumns {
  return {
    id,
    ip: values[at.ip],
    nickname: values[at.nickname] as string | null,
    resource,
    combined: values[at.combined] as string | null,
    referrer_key: values[at.referrer] as number | null,
    user_agent_key: values[at.userAgent] as number | null,
  };
}

/**
 * The columns a catch-up reads of each row (`behindSql`), in order, as raw
 * values: the resource as its start's key (its text from the strings'
 * cache, not a subquery a row) and the rest.
 */
type BehindRow = [
  id: bigint, ip: unknown, nickname: string | null, prefix: bigint | null, rest: string, combined: string | null,
  referrer: bigint | null, userAgent: bigint | null,
];
const behindSql = "SELECT r.id, r.ip, r.nickname, r.resource_prefix, r.resource, r.combined, r.referrer, r.user_agent";

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
 * Returns the document's tokens, and the trigrams its text has (valid
 * until the next document is made).
 */
export function searchDoc(row: SearchDocColumns, stop: StopGrams): { tokens: string; grams: DistinctGrams } {
  const found = distinctGrams(
    row.combined !== null
      ? [row.combined]
      : row.nickname !== null ? [ipFromSql(row.ip), row.nickname, row.resource] : [ipFromSql(row.ip), row.resource],
  );
  // Written into one buffer as latin1 (every token is ASCII): no string per gram, none joined per token. A
  // token takes at most 25 bytes with its space (a gram of three 4-byte code points), an entry's 18.
  const { grams, count } = found;
  const room = count * 25 + 2 * 18;
  if (tokenBuffer.length < room) tokenBuffer = Buffer.allocUnsafe(2 * room);
  const buf = tokenBuffer;
  let at = 0;
  const put = (token: string) => {
    if (at > 0) buf[at++] = space;
    at += buf.write(token, at, "latin1");
  };
  for (let i = 0; i < count; i++) {
    const gram = grams[i]!;
    if (stop.stopped(gram, row.id)) continue;
    if (typeof gram !== "number") {
      put(gramToken(gram));
      continue;
    }
    if (at > 0) buf[at++] = space;
    at = writeAsciiGramToken(buf, at, gram);
  }
  if (row.combined === null) {
    if (row.referrer_key !== null) put(entryToken(row.referrer_key));
    if (row.user_agent_key !== null) put(entryToken(row.user_agent_key));
  }
  return { tokens: buf.toString("latin1", 0, at), grams: found };
}

const space = 0x20;
/** Where searchDoc writes a document's tokens (grown as needed). */
let tokenBuffer = Buffer.allocUnsafe(4096);

/**
 * The search index as writes keep it, inside their transaction: a row's
 * document added, replaced or removed (a contentless index takes a document
 * out when given the same tokens again, which searchDoc gives for the same
 * columns and id). `forget` after a write or a group that did not commit.
 *
 * New rows are indexed in bulk, not one by one: FTS5 writes a segment of
 * its index per transaction and merges them, so a document costs about
 * twice as much in a transaction of 1,000 as in one of 10,000 (measured:
 * 7.8 against 3.7 µs of CPU). Every row of a record with an id up to
 * `search_indexed` (meta) has its document, and no row after it: a Read
 * takes those as candidates whatever its pattern (snapshot-paging.ts), and
 * `catchUp` indexes them, in the transaction that moves the mark (done by
 * a job of the group commit once enough are behind, or when writes pause:
 * write/search-catch-up.ts). A row
 * after the mark that is rewritten or deleted needs nothing done: its
 * document is made from what it holds when it is indexed, read back then
 * (keeping the columns each write stored instead, for a few thousand rows,
 * cost the garbage collector more than the reading: measured in-process).
 */
export function createSearchIndex(db: Database.Database, strings: Pick<Strings, "text">, stopGrams?: StopGramRule): SearchIndex {
  const stop = createStopGramsWriter(db, stopGrams);
  const stmt = {
    insert: db.prepare("INSERT INTO request_search (rowid, doc) VALUES (?, ?)"),
    remove: db.prepare("INSERT INTO request_search (request_search, rowid, doc) VALUES ('delete', ?, ?)"),
    // Every row stored so far was indexed as it was written (by builds before the mark, and by migration 006).
    start: db.prepare("INSERT OR IGNORE INTO meta (key, value) SELECT 'search_indexed', value FROM meta WHERE key = 'seq'"),
    indexed: db.prepare(`SELECT ${searchIndexedSql}`).pluck().safeIntegers(true),
    mark: db.prepare("UPDATE meta SET value = ? WHERE key = 'search_indexed'"),
  };
  // Prepared when first used: migration 006 indexes rows before `requests` has its present columns.
  let behind: Database.Statement | undefined;
  stmt.start.run();
  let indexedUpTo = stmt.indexed.get() as bigint;

  /** Indexes a row, and counts its grams for the stop grams, which may then stop some for rows from `nextId` on. */
  function add(row: SearchDocColumns, nextId: bigint): void {
    const doc = searchDoc(row, stop.current());
    stmt.insert.run(row.id, doc.tokens);
    stop.observe(doc.grams, nextId);
  }

  return {
    /** Whether row `id` is among those the index holds (a rewrite or delete of it must change its document). */
    covers: (id: bigint) => id <= indexedUpTo,
    /** How many row ids (at most) after the mark, when the last id given out is `lastId`. */
    behind: (lastId: bigint) => lastId - indexedUpTo,
    /**
     * Indexes a row the index covers but that has no document: a placeholder
     * whose record came (`nextId`: above every row id given out so far).
     */
    add,
    /**
     * Indexes every row of a record after the mark, up to `upTo` (by default
     * `lastId`, the last row id given out), and moves the mark there.
     */
    catchUp(lastId: bigint, upTo = lastId): void {
      const to = upTo < lastId ? upTo : lastId;
      if (to <= indexedUpTo) return;
      behind ??= db.prepare(`${behindSql} FROM requests r WHERE r.id > ? AND r.id <= ? AND r.has_record = 1 ORDER BY r.id`)
        .safeIntegers(true)
        .raw();
      for (const [id, ip, nickname, prefix, rest, combined, referrer, userAgent] of behind.all(indexedUpTo, to) as BehindRow[]) {
        const resource = prefix === null ? rest : strings.text(Number(prefix)) + rest;
        add({ id, ip, nickname, resource, combined, referrer_key: referrer, user_agent_key: userAgent }, lastId + 1n);
      }
      stmt.mark.run(to);
      indexedUpTo = to;
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
      if (row.id > indexedUpTo) return;
      stmt.remove.run(row.id, searchDoc(row, stop.current()).tokens);
    },
    forget(): void {
      stop.forget();
      indexedUpTo = stmt.indexed.get() as bigint;
    },
  };
}

export interface SearchIndex {
  /**
   * Whether row `id` is among those the index holds (a rewrite or delete of it must change its document).
   */
  covers(id: bigint): boolean;
  /** How many row ids (at most) after the mark, when the last id given out is `lastId`. */
  behind(lastId: bigint): bigint;
  /**
   * Indexes a row the index covers but that has no document: a placeholder
   * whose record came (`nextId`: above every row id given out so far).
   */
  add(row: SearchDocColumns, nextId: bigint): void;
  /**
   * Indexes every row of a record after the mark, up to `upTo` (by default
   * `lastId`, the last row id given out), and moves the mark there.
   */
  catchUp(lastId: bigint, upTo?: bigint): void;
  /** Indexes a row's new columns in place of its old ones (nothing to do when the document is the same). */
  replace(old: SearchDocColumns, now: SearchDocColumns): void;
  remove(row: SearchDocColumns): void;
  forget(): void;
}

import type Database from "better-sqlite3";
import { fieldColumns, ipFromSql } from "./stored-record.js";
import { stringToken } from "./strings.js";

/** The stored columns a request's search document is made from. */
export interface SearchDocColumns {
  ip: unknown;
  nickname: string | null;
  resource: string;
  combined: string | null;
  referrer_key: number | bigint | null;
  user_agent_key: number | bigint | null;
}

/** The document columns among a record's values (stored-record.ts recordValues). */
export function docColumnsOf(values: readonly unknown[]): SearchDocColumns {
  const at = (column: (typeof fieldColumns)[number]) => values[fieldColumns.indexOf(column)];
  return {
    ip: at("ip"),
    nickname: at("nickname") as string | null,
    resource: at("resource") as string,
    combined: at("combined") as string | null,
    referrer_key: at("referrer") as number | null,
    user_agent_key: at("user_agent") as number | null,
  };
}

/** The columns of request_search, in the order searchDoc gives them. */
const docColumns = "ip, nickname, resource, combined, referrer, user_agent";

/**
 * A request's document in the search index (request_search, FTS5 with the
 * trigram tokenizer, contentless): what a combined line's pieces can be
 * looked up by. A line kept whole (`combined` stored) is indexed whole. A
 * derived line is indexed by the fields that vary: ip, nickname and
 * resource as text, referrer and user agent as the token of their string
 * entry (whose text `strings_search` indexes once). The time, method,
 * HTTP version, status and size are not indexed: a piece of a pattern that
 * may lie in them requires nothing of the index (search-query.ts).
 *
 * A pure function of the stored columns: a document is taken out of the
 * contentless index by giving the same values again.
 */
export function searchDoc(row: SearchDocColumns): string[] {
  if (row.combined !== null) return ["", "", "", row.combined, "", ""];
  const token = (key: number | bigint | null) => (key === null ? "" : stringToken(Number(key)));
  return [ipFromSql(row.ip), row.nickname ?? "", row.resource, "", token(row.referrer_key), token(row.user_agent_key)];
}

/** Adds and removes request documents, inside the write's transaction. */
export function createSearchDocs(db: Database.Database) {
  const stmt = {
    insert: db.prepare(`INSERT INTO request_search (rowid, ${docColumns}) VALUES (?, ?, ?, ?, ?, ?, ?)`),
    remove: db.prepare(`INSERT INTO request_search (request_search, rowid, ${docColumns}) VALUES ('delete', ?, ?, ?, ?, ?, ?, ?)`),
  };
  return {
    add(id: number | bigint, doc: readonly string[]): void {
      stmt.insert.run(id, ...doc);
    },
    /** Takes out the document `add` put in (the same values). */
    remove(id: number | bigint, doc: readonly string[]): void {
      stmt.remove.run(id, ...doc);
    },
  };
}

export type SearchDocs = ReturnType<typeof createSearchDocs>;

import type Database from "better-sqlite3";

/**
 * Repetitive strings (methods, HTTP versions, referrers, user agents,
 * hosts, url map entries, the constant start of resources) are stored
 * once, in `strings`, and rows carry
 * their key. Keys are never reused: entries are never deleted, and a key
 * is handed out only by a committed insert, so a key read once names the
 * same text for good.
 */
export const stringKind = { method: 0, httpVersion: 1, referrer: 2, userAgent: 3, host: 4, urlMapEntry: 5, resourcePrefix: 6 } as const;
export type StringKind = (typeof stringKind)[keyof typeof stringKind];

/**
 * Kinds whose entries the search index names by a token in each request's
 * document (search-doc.ts), and whose texts it indexes once, in
 * `strings_search`, so a search finds the entries a piece of text is in.
 */
export function searchedKind(kind: StringKind): boolean {
  return kind === stringKind.referrer || kind === stringKind.userAgent;
}

/**
 * Keys of strings for writes: looked up or inserted, and cached, and the
 * texts of keys. A key inserted by a write that is then rolled back must not
 * survive it: `forget` drops the caches whenever a write fails or a group
 * does not commit (as keys.ts does), or Delete blanks entries.
 */
export function createStrings(db: Database.Database): Strings {
  // One map a kind: a key is found without building a name for it.
  const caches = Object.values(stringKind).map(() => new Map<string, number>());
  /** Texts by key, as the search index's catch-up joins them to rows. */
  const texts = new Map<number, string>();
  const stmt = {
    text: db.prepare("SELECT text FROM strings WHERE id = ?").pluck(),
    find: db.prepare("SELECT id FROM strings WHERE kind = ? AND text = ?").pluck(),
    insert: db.prepare("INSERT INTO strings (kind, text) VALUES (?, ?)"),
    index: db.prepare("INSERT INTO strings_search (rowid, text) VALUES (?, ?)"),
  };

  return {
    key(kind: StringKind, text: string): number {
      const cache = caches[kind]!;
      let key = cache.get(text);
      if (key === undefined) {
        key = stmt.find.get(kind, text) as number | undefined;
        if (key === undefined) {
          key = Number(stmt.insert.run(kind, text).lastInsertRowid);
          if (searchedKind(kind)) stmt.index.run(key, text);
        }
        if (cache.size >= 100_000) cache.clear();
        cache.set(text, key);
      }
      return key;
    },
    text(key: number): string {
      let text = texts.get(key);
      if (text === undefined) {
        text = (stmt.text.get(key) as string | undefined) ?? "";
        if (texts.size >= 100_000) texts.clear();
        texts.set(key, text);
      }
      return text;
    },
    forget(): void {
      for (const cache of caches) cache.clear();
      texts.clear();
    },
  };
}

export interface Strings {
  key(kind: StringKind, text: string): number;
  /** The text of a key (cached; "" for none): a key names one text until Delete blanks it, which calls `forget`. */
  text(key: number): string;
  forget(): void;
}

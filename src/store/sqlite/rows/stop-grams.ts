import type Database from "better-sqlite3";
import { type DistinctGrams, type Gram, gramOf, gramText } from "./trigram.js";

/** When grams are stopped: after each `window` documents, those in more than `share` of them. */
export interface StopGramRule {
  window: number;
  share: number;
  /** Counts one document in this many. */
  sample: number;
}

/**
 * A sixteenth of 4,096 documents (docs/search-index.md), of every eighth
 * document: counting a sample is as good a guide and an eighth of the work.
 */
export const defaultStopGramRule: StopGramRule = { window: 4096, share: 1 / 16, sample: 8 };

/**
 * Grams too common to be worth indexing ("stop grams"): by default in more
 * than a sixteenth of the documents of a window, such as `/ap` or `pos` in an API's
 * paths. They take most of an index's room and narrow a search little. A
 * gram is stopped from a row id on (`since`): documents of rows from then on
 * leave it out; older rows keep it (their documents are taken out of the
 * contentless index by giving the same tokens again, so a row's document
 * must not change with the stop set). A search never asks for a stopped
 * gram (search-query.ts). The set only grows.
 */
export interface StopGrams {
  /** Whether `gram` is left out of the document of row `id`. */
  stopped(gram: Gram, id: bigint): boolean;
  /** Whether `gram` is stopped for any row (a search cannot ask for it). */
  any(gram: string): boolean;
}

/** The stop grams as stored, for readers (reloaded when the set grows). */
export function createStopGramsReader(db: Database.Database): () => StopGrams {
  const stmt = {
    count: db.prepare("SELECT count(*) FROM search_stopgrams").pluck(),
    all: db.prepare("SELECT gram, since FROM search_stopgrams").raw().safeIntegers(true),
  };
  let loaded = -1;
  let since = new Map<Gram, bigint>();
  return () => {
    const count = stmt.count.get() as number;
    if (count !== loaded) {
      since = loadSince(stmt.all);
      loaded = count;
    }
    return stopGramsOf(since);
  };
}

/** The stored stop grams, by Gram. */
function loadSince(all: Database.Statement): Map<Gram, bigint> {
  return new Map((all.all() as [string, bigint][]).map(([gram, from]) => [gramOf(gram), from]));
}

function stopGramsOf(since: ReadonlyMap<Gram, bigint>): StopGrams {
  return {
    stopped: (gram, id) => {
      const from = since.get(gram);
      return from !== undefined && id >= from;
    },
    any: (gram) => since.has(gramOf(gram)),
  };
}

/**
 * The stop grams for the writer: it counts the grams of (a sample of) the
 * documents it indexes and, every `rule.window` of those, stops those in more than
 * `rule.share` of them, inside the write's transaction. `forget` reloads the
 * set after a write or a group that did not commit.
 */
export function createStopGramsWriter(db: Database.Database, rule: StopGramRule = defaultStopGramRule): StopGramsWriter {
  const stmt = {
    all: db.prepare("SELECT gram, since FROM search_stopgrams").raw().safeIntegers(true),
    insert: db.prepare("INSERT OR IGNORE INTO search_stopgrams (gram, since) VALUES (?, ?)"),
  };
  let since = loadSince(stmt.all);
  /**
   * The ASCII grams stopped, marked by number: nearly every gram of a
   * document is not, and is found so without a lookup in `since`.
   */
  const marked = new Uint8Array(1 << 21);
  const mark = (gram: Gram) => {
    if (typeof gram === "number") marked[gram] = 1;
  };
  /** The stop grams of `since`, marked. */
  const markedStopGrams = (): StopGrams => {
    marked.fill(0);
    for (const gram of since.keys()) mark(gram);
    const lookedUp = stopGramsOf(since);
    return {
      stopped: (gram, id) => (typeof gram === "number" && marked[gram] === 0 ? false : lookedUp.stopped(gram, id)),
      any: lookedUp.any,
    };
  };
  let current = markedStopGrams();
  let counts = new Map<Gram, number>();
  let documents = 0;
  let seen = 0;

  return {
    current(): StopGrams {
      return current;
    },
    /** Counts a new document's grams; past a window, stops the frequent ones for rows from `nextId` on. */
    observe({ grams, count }: DistinctGrams, nextId: bigint): void {
      if (++seen % rule.sample !== 0) return;
      for (let i = 0; i < count; i++) counts.set(grams[i]!, (counts.get(grams[i]!) ?? 0) + 1);
      if (++documents < rule.window) return;
      for (const [gram, count] of counts) {
        if (count > documents * rule.share && !since.has(gram)) {
          stmt.insert.run(gramText(gram), nextId);
          since.set(gram, nextId);
          mark(gram);
        }
      }
      counts = new Map();
      documents = 0;
    },
    forget(): void {
      since = loadSince(stmt.all);
      current = markedStopGrams();
      counts = new Map();
      documents = 0;
    },
  };
}

export interface StopGramsWriter {
  current(): StopGrams;
  /** Counts a new document's grams; past a window, stops the frequent ones for rows from `nextId` on. */
  observe(grams: DistinctGrams, nextId: bigint): void;
  forget(): void;
}

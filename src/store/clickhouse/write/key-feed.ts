import type { Snapshot } from "../read/snapshot.js";
import { sqlInt } from "../rows/sql-literal.js";
import type { SqlClient } from "../sql-client.js";
import type { KnownKeys } from "./known-keys.js";

/**
 * Other servers' new keys, into this server's known-keys filter: the
 * request_keys table (migration 004, ordered by slot and number) holds the
 * key of every request an insert creates, so what another slot created
 * since this server last looked is a range read per slot. Everything above
 * the marks read before it is read (a slot's keys up to its mark are all
 * visible once the mark is; keys above it, of inserts still going on, are
 * read again next time), so the filter holds every key of every write
 * acknowledged before the marks were read.
 */
export function createKeyFeed(sql: SqlClient, known: KnownKeys, ownSlot: number): KeyFeed {
  /** slot → the mark up to which its keys are in the filter. */
  const seen = new Map<number, bigint>();
  return {
    /** The filter was loaded from every stored key after `marks` were read. */
    loaded(marks: Snapshot): void {
      for (const [slot, mark] of marks.marks) seen.set(slot, mark);
    },

    /**
     * Adds the keys other slots created past what was seen; `slots` are
     * every slot the servers table names, `open` whether one of them may be
     * writing now (else only a mark past what was seen sends a query).
     */
    async catchUp(marks: Snapshot, slots: readonly number[], open: boolean): Promise<void> {
      const others = slots.filter((s) => s !== 0 && s !== ownSlot);
      if (!open && others.every((s) => (marks.marks.get(s) ?? 0n) <= (seen.get(s) ?? 0n))) return;
      const ranges = others.map((s) => `(slot = ${s} AND seq > ${sqlInt(seen.get(s) ?? 0n)})`).join(" OR ");
      for await (const [app, requestId] of sql.stream(`SELECT app, request_id FROM request_keys WHERE ${ranges}`)) known.add(app!, requestId!);
      for (const s of others) {
        const mark = marks.marks.get(s);
        if (mark !== undefined && mark > (seen.get(s) ?? 0n)) seen.set(s, mark);
      }
    },
  };
}

export interface KeyFeed {
  /** The filter was loaded from every stored key after `marks` were read. */
  loaded(marks: Snapshot): void;
  /**
   * Adds the keys other slots created past what was seen; `slots` are
   * every slot the servers table names, `open` whether one of them may be
   * writing now (else only a mark past what was seen sends a query).
   */
  catchUp(marks: Snapshot, slots: readonly number[], open: boolean): Promise<void>;
}

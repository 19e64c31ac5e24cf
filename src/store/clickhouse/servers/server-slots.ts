import { randomUUID } from "node:crypto";
import { ReqlogError } from "../../../reqlog-error.js";
import type { Snapshot } from "../read/snapshot.js";
import { sqlInt } from "../rows/sql-literal.js";
import { selectStoredAsWritten } from "../rows/request-row.js";
import type { SqlClient } from "../sql-client.js";
import { type ChangeClock, createChangeClock, legacyLimit, maxSlots, slotBits } from "./change-clock.js";

/** How often a server writes its row (its mark, and that it is alive). */
export const heartbeatMs = 1_000;
/** A server whose row is older than this refuses to commit: another may close its slot soon. */
const fencedAfterMs = 5_000;
/** A slot whose row is older than this is closed by the next server that reads the marks. */
const closedAfterMs = 10_000;

interface SlotRow {
  slot: number;
  holder: string;
  last_beat: string;
  top_mark: string;
  is_closed: number;
}

export interface ServerSlots {
  /** This server's id (in its rows, and in the query ids of its inserts). */
  readonly server: string;
  readonly clock: ChangeClock;
  /**
   * The marks every server has published, this one's own as committed: what
   * a Read or a Tail may take as committed now. Closes the slots of servers
   * gone silent on the way. `others` tells whether another slot may have
   * inserts going on (a live server, or a silent one not yet closed).
   */
  marks(at: bigint): Promise<Snapshot & { others: boolean; slots: number[] }>;
  /** Publishes this server's mark (its committed groups): done before their writes are answered. */
  publish(): Promise<void>;
  /** Throws UNAVAILABLE when this server could not write its row for a while (another may take its slot). */
  checkFresh(): void;
  /** Closes this server's slot (a clean stop). */
  close(): Promise<void>;
}

const wallUs = () => BigInt(Date.now()) * 1000n;

/** A row's beat: µs of the wall clock, never the same twice in this process (the latest row of a slot wins by it). */
let lastBeat = 0n;
function beatNow(): string {
  const us = BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000));
  lastBeat = us > lastBeat ? us : lastBeat + 1n;
  return String(lastBeat);
}

/**
 * The `servers` table (migration 004): one row per slot and heartbeat, the
 * latest per slot (by beat) saying which server holds it, its mark, and
 * whether it is closed. Kept on one shard, so one query reads every mark at
 * one moment. See docs/architecture.md, "many servers, one database".
 */
export async function claimServerSlot(sql: SqlClient, withLock: <T>(work: () => Promise<T>) => Promise<T>): Promise<ServerSlots> {
  const server = randomUUID();
  const latest = () =>
    // (Aliases not named after columns: 18.16 would read them inside the other aggregates.)
    sql.rows<SlotRow>(
      `SELECT slot, argMax(server, beat) AS holder, max(beat) AS last_beat, max(mark) AS top_mark, argMax(closed, beat) AS is_closed
       FROM servers GROUP BY slot ORDER BY slot`,
    );

  // A slot never used, or closed; the lowest, so that vectors stay short.
  const { slot, start } = await withLock(async () => {
    const rows = await latest();
    const bySlot = new Map(rows.map((r) => [r.slot, r]));
    const now = Date.now();
    let chosen: number | undefined;
    for (let s = 1; s <= maxSlots && chosen === undefined; s++) {
      const row = bySlot.get(s);
      if (!row || row.is_closed === 1) chosen = s;
      else if (now - Number(BigInt(row.last_beat) / 1000n) > closedAfterMs) chosen = s; // silent: closed below first
    }
    if (chosen === undefined) throw ReqlogError.unavailable(`every one of the ${maxSlots} server slots is held: too many reqlog servers on this database`);
    const held = bySlot.get(chosen);
    let mark = BigInt(held?.top_mark ?? "0");
    if (held && held.is_closed === 0) mark = await closeSlot(held);
    await sql.insert("servers", [{ slot: chosen, server, beat: beatNow(), mark: String(mark), closed: 0 }]);
    return { slot: chosen, start: mark };
  });

  // The highest number of any slot, so this server numbers after everything stored.
  const [top] = await sql.rows<{ seq: string }>("SELECT max(mark) AS seq FROM servers");
  const clock = createChangeClock(slot, start, wallUs);
  clock.observe(BigInt(top?.seq ?? "0"));

  let beatAt = Date.now();
  let published = clock.committed;
  let closed = false;

  /** The highest number of `row`'s slot stored, as its final mark (the server is gone: nothing more comes). */
  async function closeSlot(row: SlotRow): Promise<bigint> {
    const [stored] = await sql.rows<{ top: string }>(
      selectStoredAsWritten("max(seq) AS top", `WHERE seq >= ${sqlInt(legacyLimit)} AND bitAnd(seq, ${(1 << Number(slotBits)) - 1}) = ${row.slot}`),
    );
    const mark = BigInt(stored?.top ?? "0") > BigInt(row.top_mark) ? BigInt(stored!.top) : BigInt(row.top_mark);
    await sql.insert("servers", [{ slot: row.slot, server: row.holder, beat: beatNow(), mark: String(mark), closed: 1 }]);
    return mark;
  }

  /** Set when another server closed this one's slot (it was silent too long): it commits no more. */
  let lost = false;

  /**
   * Writes this server's row. Its beat and its mark are taken together, at
   * once: a row with a later beat then never has a lower mark, so the row
   * ReplacingMergeTree keeps when it merges (the latest beat) keeps the
   * highest mark (a heartbeat that read the mark before a group's publish
   * and wrote after it would otherwise put the mark back).
   */
  async function writeRow(): Promise<bigint> {
    const mark = clock.committed;
    await sql.insert("servers", [{ slot, server, beat: beatNow(), mark: String(mark), closed: 0 }]);
    beatAt = Date.now();
    if (mark > published) published = mark;
    return mark;
  }

  async function beat(): Promise<void> {
    const [holder] = await sql.rows<{ holder: string; is_closed: number }>(
      `SELECT argMax(server, beat) AS holder, argMax(closed, beat) AS is_closed FROM servers WHERE slot = ${slot}`,
    );
    if (holder && (holder.holder !== server || holder.is_closed === 1)) {
      lost = true;
      return;
    }
    await writeRow();
  }

  let beating: Promise<void> | undefined;
  const timer = setInterval(() => {
    // (A failed beat shows as a stale beatAt: checkFresh.)
    if (!closed && !beating) beating = beat().catch(() => {}).finally(() => (beating = undefined));
  }, heartbeatMs);
  timer.unref();

  return {
    server,
    clock,

    async marks(at) {
      const rows = await latest();
      const marks = new Map<number, bigint>();
      const now = Date.now();
      let others = false;
      for (const row of rows) {
        let mark = BigInt(row.top_mark);
        if (row.slot === slot) mark = clock.committed > mark ? clock.committed : mark;
        else if (row.is_closed === 0) {
          if (now - Number(BigInt(row.last_beat) / 1000n) > closedAfterMs) mark = await closeSlot(row);
          else others = true;
        }
        if (row.slot === 0 || mark >= legacyLimit) marks.set(row.slot, mark);
      }
      return { marks, at, others, slots: rows.map((r) => r.slot) };
    },

    async publish() {
      if (clock.committed > published) await writeRow();
    },

    checkFresh() {
      if (lost) throw ReqlogError.unavailable("this server was silent too long and another closed its slot: restart it; retry on another server");
      const silent = Date.now() - beatAt;
      if (silent > fencedAfterMs) {
        throw ReqlogError.unavailable(`this server could not reach ClickHouse for ${Math.round(silent / 1000)} s: retry on another server`);
      }
    },

    async close() {
      closed = true;
      clearInterval(timer);
      await beating; // (its row must not come after the closing one)
      await sql.insert("servers", [{ slot, server, beat: beatNow(), mark: String(clock.committed), closed: 1 }]);
    },
  };
}

import type { RequestLineCap } from "../../../write/request-line-cap.js";
import type { CommittedWrites } from "../../committed-writes.js";
import type { Clock } from "../../../clock.js";
import { holds } from "../read/snapshot.js";
import { slotOf } from "../servers/change-clock.js";
import type { ServerSlots } from "../servers/server-slots.js";
import { createInsertBarrier, insertQueryId } from "./insert-barrier.js";
import type { KeyFeed } from "./key-feed.js";
import type { KnownKeys } from "./known-keys.js";
import { type RequestRow, requestKey, selectRequests, selectStoredAsWritten } from "../rows/request-row.js";
import {
  changeColumns,
  changesText,
  createRequestWriter,
  type RequestWriter,
  type RollupScope,
  type StoredState,
  storedLineKey,
} from "./request-writer.js";
import type { SqlClient } from "../sql-client.js";
import { sqlInt, sqlList, sqlString } from "../rows/sql-literal.js";
import type { Outcome } from "./write-batcher.js";

/** A request a write names, and the lines it brings. */
export interface Touch {
  app: string;
  /** The request id as latin1 text (sql-literal.ts). */
  requestId: string;
  /** The lines it brings (their times tell which are stored already). */
  lines: readonly { time: bigint }[];
}

/** One write of a group: what it touches, and its rules applied to the group's state. */
export interface GroupWork {
  touches: readonly Touch[];
  apply(writer: RequestWriter): unknown;
}

/** `(app = … AND <column> IN …) OR …` for values grouped by app. */
function byApp(apps: Map<string, Set<string>>, column: string, more: (app: string) => string = () => ""): string {
  return [...apps]
    .map(([app, values]) => `(app = ${sqlString(app)} AND ${column} IN ${sqlList([...values])}${more(app)})`)
    .join(" OR ");
}

function addTo<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(value);
}

/**
 * Stores groups of writes (write-batcher.ts): reads the stored state of the
 * requests a group names (their latest versions, and their lines at the
 * times the group's lines carry), applies each write in order, and inserts
 * every change of the group into request_changes in one INSERT (the
 * materialized views split it into requests, lines, moves and rollups, the
 * rollups summed per `scope`: request-writer.ts). Retention's tombstones go
 * the same way.
 */
export interface GroupCommitParts {
  sql: SqlClient;
  slots: ServerSlots;
  known: KnownKeys;
  feed: KeyFeed;
  scope: RollupScope;
  now: Clock;
  /** What the groups committed tell the write observers. */
  notes: CommittedWrites;
  /** What one request may hold of app lines. */
  cap: RequestLineCap;
  onCommit: () => void;
}

/** How long a group waits for another server to publish a version it read (its server then is closed: server-slots.ts). */
const publishWaitMs = 15_000;

export function createGroupCommit({ sql, slots, known, feed, scope, now, notes, cap, onCommit }: GroupCommitParts): GroupCommit {
  const clock = slots.clock;
  const awaitOtherInserts = createInsertBarrier(sql, slots.server);
  let inserts = 0;

  /**
   * What other servers wrote, made visible to this group: their marks, their
   * inserts going on awaited (when another server is there), and their new
   * keys added to the filter (docs/architecture.md).
   */
  async function catchUp() {
    const marks = await slots.marks(now());
    if (marks.others) await awaitOtherInserts();
    await feed.catchUp(marks, marks.slots, marks.others);
    return marks;
  }

  /**
   * Versions are built only on versions their servers have published: a
   * loaded row above its slot's mark (its insert returned, its mark not yet
   * written) is waited for. So a snapshot holding a version holds every
   * version it was built on.
   */
  async function awaitPublished(rows: Iterable<RequestRow>, marks: Awaited<ReturnType<typeof catchUp>>): Promise<void> {
    let pending = [...rows].map((r) => BigInt(r.seq)).filter((seq) => slotOf(seq) !== clock.slot && !holds(marks, seq));
    const deadline = Date.now() + publishWaitMs;
    while (pending.length > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      const fresh = await slots.marks(now());
      pending = pending.filter((seq) => !holds(fresh, seq));
    }
  }

  async function load(touches: readonly Touch[]): Promise<StoredState> {
    const state: StoredState = { rows: new Map(), lines: new Map() };
    // Only requests that may be stored are looked up (known-keys.ts).
    const ids = new Map<string, Set<string>>();
    for (const t of touches) if (known.mayHave(t.app, t.requestId)) addTo(ids, t.app, sqlString(t.requestId));
    if (ids.size === 0) return state;
    // Which exist first (a scan of the key columns): most writes are of new
    // requests, and then the whole rows need not be read at all.
    const stored = new Map<string, Set<string>>();
    const keys = await sql.rows<{ app: string; request_id: string }>(
      selectStoredAsWritten("app, request_id", `FINAL WHERE (${byApp(ids, "request_id")}) AND deleted = 0`),
    );
    for (const key of keys) addTo(stored, key.app, sqlString(key.request_id));
    if (stored.size > 0) {
      for (const row of await sql.rows<RequestRow>(selectRequests(`FINAL WHERE ${byApp(stored, "request_id")}`))) {
        if (row.deleted === 0) state.rows.set(requestKey(row.app, row.request_id), row);
      }
    }
    // Lines of stored requests at the times this group's lines carry: a line
    // sent again is found among them.
    const lineIds = new Map<string, Set<string>>();
    const times = new Map<string, Set<string>>();
    for (const t of touches) {
      if (t.lines.length === 0 || !state.rows.has(requestKey(t.app, t.requestId))) continue;
      addTo(lineIds, t.app, sqlString(t.requestId));
      for (const line of t.lines) addTo(times, t.app, sqlInt(line.time));
    }
    if (lineIds.size > 0) {
      const where = byApp(lineIds, "request_id", (app) => ` AND time IN ${sqlList([...times.get(app)!])}`);
      const lines = await sql.rows<{ app: string; request_id: string; rkey: string; time: string; pos: number; level: number; message: string }>(
        `SELECT app, request_id, rkey, time, pos, level, message FROM lines WHERE ${where}`,
      );
      for (const line of lines) {
        const key = requestKey(line.app, line.request_id);
        if (state.rows.get(key)?.rkey === line.rkey) addTo(state.lines, key, storedLineKey(line));
      }
    }
    return state;
  }

  /** Inserts the writer's changes in one INSERT; then they count as committed. */
  async function save(writer: RequestWriter): Promise<void> {
    if (writer.changes.length > 0) {
      for (const { row } of writer.changes) known.add(row.app, row.request_id);
      await sql.insertText("request_changes", changeColumns, changesText(writer.changes, scope), insertQueryId(slots.server, ++inserts));
      clock.commit(BigInt(writer.changes.at(-1)!.row.seq));
      // Published before the writes are answered: any server's next Read holds them.
      await slots.publish();
    }
    onCommit();
  }

  return {
    /** Stores a group of writes; the outcome of each (a write that throws is undone alone). */
    async commitGroup(works: GroupWork[]): Promise<Outcome[]> {
      slots.checkFresh();
      const marks = await catchUp();
      const state = await load(works.flatMap((w) => w.touches));
      await awaitPublished(state.rows.values(), marks);
      for (const row of state.rows.values()) clock.observe(BigInt(row.seq));
      const writer = createRequestWriter(state, clock.next, notes, cap);
      const outcomes = works.map((work): Outcome => {
        const mark = writer.mark();
        const noted = notes.mark();
        try {
          return { ok: true, value: work.apply(writer) };
        } catch (err) {
          writer.undo(mark);
          notes.undo(noted);
          return { ok: false, err };
        }
      });
      try {
        await save(writer);
      } catch (err) {
        notes.abort();
        throw err;
      }
      notes.commit();
      return outcomes;
    },

    /** Expires these stored requests (tombstones); returns how many. */
    async expire(rows: readonly RequestRow[]): Promise<number> {
      slots.checkFresh();
      for (const row of rows) clock.observe(BigInt(row.seq));
      const writer = createRequestWriter({ rows: new Map(), lines: new Map() }, clock.next, notes, cap);
      for (const row of rows) writer.expire(row);
      await save(writer);
      return rows.length;
    },
  };
}

export interface GroupCommit {
  /** Stores a group of writes; the outcome of each (a write that throws is undone alone). */
  commitGroup(works: GroupWork[]): Promise<Outcome[]>;
  /** Expires these stored requests (tombstones); returns how many. */
  expire(rows: readonly RequestRow[]): Promise<number>;
}

import type { AppLine, PreparedRecord, RequestContext } from "../../../domain/records.js";
import { lineWireBytes, recordWireBytes } from "../../../write/wire-size.js";
import type { CommittedWrites } from "../../committed-writes.js";
import type { NewLines } from "../../store.js";
import { checkRequestLines, type RequestLineCap } from "../../../write/request-line-cap.js";
import {
  type ColumnValue,
  combinedColumn,
  fieldColumns,
  finishedSetBit,
  finishedSetFlag,
  moduleSetBit,
  moduleSetFlag,
  placeholderCombined,
  placeholderRecord,
  type RequestRow,
  recordColumns,
  requestKey,
  storedIp,
} from "../rows/request-row.js";
import { createRollupDeltas, noRollup, type Rollup, rollupColumns, rollups, type RollupDeltas, rowStatsFacts } from "./rollup-deltas.js";
import { bytesToText } from "../rows/sql-literal.js";
import { tsvNumbers, tsvStrings, tsvValue } from "../rows/tab-separated.js";

/** What a group of writes starts from, loaded before it runs (group-commit.ts). */
export interface StoredState {
  /** The latest version of each request the group names, by requestKey (absent: never stored, or expired). */
  rows: Map<string, RequestRow>;
  /** Lines stored for those requests (their current incarnation), at least those at the times the group's lines carry. */
  lines: Map<string, Set<string>>;
}

/** One new version of a request: the row, the version it replaces, the lines it adds. */
export interface Change {
  row: RequestRow;
  prev: RequestRow | undefined;
  lines: readonly AppLine[];
}

const noLines: readonly AppLine[] = Object.freeze([]);

const lineKey = (line: Pick<AppLine, "time" | "pos" | "level" | "message">) =>
  `${line.time}\u0000${line.pos}\u0000${line.level}\u0000${line.message}`;
/** The key of a stored line (as lines rows read back: time as text). */
export const storedLineKey = (line: { time: string; pos: number; level: number; message: string }) =>
  lineKey({ ...line, time: BigInt(line.time) });

/**
 * The rules of a write, applied to the stored state of a group: upserts by
 * (app, request id), lines stored once, placeholders for lines that come
 * before their record, a finished record never turned back into an
 * in-progress one, and retention's tombstones. Every change is a new version
 * (the next change sequence number) with the version it replaces (whose
 * difference the rollups take: rollup-deltas.ts), collected in `changes` for
 * one INSERT. Each write of the group can be undone alone (`mark`, `undo`),
 * as a savepoint would.
 */
export function createRequestWriter(state: StoredState, nextSeq: () => bigint, notes: CommittedWrites, cap: RequestLineCap): RequestWriter {
  const changes: Change[] = [];
  const undoLog: (() => void)[] = [];

  function setRow(key: string, row: RequestRow | undefined): void {
    const before = state.rows.get(key);
    undoLog.push(() => (before ? state.rows.set(key, before) : state.rows.delete(key)));
    if (row) state.rows.set(key, row);
    else state.rows.delete(key);
  }

  /** The request's known lines; `fresh` starts a new incarnation with none. */
  function linesOf(key: string, fresh: boolean): Set<string> {
    const before = state.lines.get(key);
    if (before && !fresh) return before;
    const set = new Set<string>();
    undoLog.push(() => (before ? state.lines.set(key, before) : state.lines.delete(key)));
    state.lines.set(key, set);
    return set;
  }

  /** Keeps the lines not stored yet; the new totals of `row` (absent: a new request), within the cap. */
  function addLines(key: string, row: RequestRow | undefined, lines: readonly AppLine[], requestId: string) {
    if (lines.length === 0) {
      // No lines (most records): no set of known lines made. A new incarnation still forgets the old one's.
      if (row === undefined && state.lines.has(key)) {
        const before = state.lines.get(key)!;
        state.lines.delete(key);
        undoLog.push(() => state.lines.set(key, before));
      }
      const count = row?.line_count ?? "0";
      const bytes = row?.line_bytes ?? "0";
      return { added: noLines, totals: { max_level: row?.max_level ?? -1, line_count: String(count), line_bytes: String(bytes) } };
    }
    const known = linesOf(key, row === undefined);
    const added: AppLine[] = [];
    let bytes = 0;
    let maxLevel = row?.max_level ?? -1;
    const addedKeys: string[] = [];
    for (const line of lines) {
      const k = lineKey(line);
      if (line.level > maxLevel) maxLevel = line.level;
      if (known.has(k)) continue;
      known.add(k);
      addedKeys.push(k);
      added.push(line);
      bytes += lineWireBytes(line);
    }
    // One undo for the call's lines (a closure a line was garbage for every line stored).
    if (addedKeys.length > 0) undoLog.push(() => addedKeys.forEach((k) => known.delete(k)));
    // Totals stay far below 2^53 (the cap): exact as doubles, no BigInt a record.
    const lineCount = Number(row?.line_count ?? 0) + added.length;
    const lineBytes = Number(row?.line_bytes ?? 0) + bytes;
    if (added.length > 0) checkRequestLines(lineCount, lineBytes, cap, requestId);
    return {
      added,
      totals: { max_level: maxLevel, line_count: String(lineCount), line_bytes: String(lineBytes) },
    };
  }

  function save(key: string, row: RequestRow, prev: RequestRow | undefined, lines: readonly AppLine[]): void {
    setRow(key, row.deleted === 1 ? undefined : row);
    changes.push({ row, prev, lines });
    undoLog.push(() => changes.pop());
  }

  /** Adds lines to a stored request: a change; an in-progress request moves to `at`. */
  function flushInto(key: string, stored: RequestRow, request: NewLines["request"], lines: readonly AppLine[], at: bigint, first: bigint): number {
    if (lines.length === 0) return 0;
    const { added, totals } = addLines(key, stored, lines, stored.request_id);
    if (added.length > 0 && notes.watchingLines) notes.lines({ request, lines: added });
    const row: RequestRow = {
      ...stored,
      ...totals,
      seq: String(nextSeq()),
      updated_at: String(at),
      sort_time: stored.finished === 1 ? stored.sort_time : String(at),
    };
    if (stored.has_record === 0) {
      // A placeholder starts at its earliest line; its combined line follows.
      if (first < BigInt(stored.start_time as string)) row.start_time = String(first);
      row.combined = placeholderCombined(row);
    }
    save(key, row, stored, added);
    return added.length;
  }

  return {
    changes: changes as readonly Change[],

    /** Where the writes stand now, to undo back to. */
    mark: () => undoLog.length,
    /** Undoes everything since `mark` (a write that failed). */
    undo(mark: number): void {
      while (undoLog.length > mark) undoLog.pop()!();
    },

    /** Upserts one record with its lines at server time `at`; returns how many lines were new. */
    writeRecord(record: PreparedRecord, at: bigint): number {
      const log = record.log;
      const requestId = bytesToText(log.requestId);
      const key = requestKey(log.appId, requestId);
      const stored = state.rows.get(key);
      if (stored && stored.has_record === 1 && stored.finished === 1 && !log.finished) {
        // A finished record is never turned back into an in-progress one by a
        // late or retried in-progress write; its lines are still kept.
        return flushInto(key, stored, log, record.lines, at, log.startTime);
      }
      const seq = String(nextSeq());
      const { added, totals } = addLines(key, stored, record.lines, requestId);
      // Set as isFieldSet has it for proto2: an own property, not undefined.
      const more =
        (Object.hasOwn(log, "moduleId") && log.moduleId !== undefined ? moduleSetFlag : 0) +
        (Object.hasOwn(log, "finished") && log.finished !== undefined ? finishedSetFlag : 0);
      const c = recordColumns(log, more);
      const atText = String(at);
      // Every column, in rowColumns' order: one object shape for every version written.
      const row: RequestRow = {
        app: log.appId,
        request_id: requestId,
        rkey: stored?.rkey ?? seq,
        created_at: stored?.created_at ?? atText,
        seq,
        deleted: 0,
        has_record: 1,
        finished: log.finished ? 1 : 0,
        sort_time: log.finished ? String(log.endTime) : atText,
        updated_at: atText,
        module_id: log.moduleId,
        version_id: log.versionId,
        max_level: totals.max_level,
        line_count: totals.line_count,
        line_bytes: totals.line_bytes,
        record_bytes: String(recordWireBytes(log)),
        combined: combinedColumn(log, record.storedCombined === undefined),
        set_fields: c.set_fields,
        extra: c.extra,
        ip: c.ip,
        start_time: c.start_time,
        end_time: c.end_time,
        latency: c.latency,
        mcycles: c.mcycles,
        method: c.method,
        resource: c.resource,
        http_version: c.http_version,
        status: c.status,
        response_size: c.response_size,
        referrer: c.referrer,
        user_agent: c.user_agent,
        url_map_entry: c.url_map_entry,
        host: c.host,
        replica_index: c.replica_index,
      };
      // Newly finished: not stored finished before (a finished record sent again or rewritten was).
      if (log.finished && !(stored && stored.has_record === 1 && stored.finished === 1) && notes.watching) {
        // The row's facts are the record's (its columns hold the record's values, defaults where unset), and the Stats rollup asks for them again.
        notes.finished({ log, facts: rowStatsFacts(row), maxLevel: totals.max_level });
      }
      if (added.length > 0 && notes.watchingLines) notes.lines({ request: log, lines: added });
      save(key, row, stored, added);
      return added.length;
    },

    /** Stores app lines of one request (a placeholder until its record arrives); returns how many were new. */
    flushLines(request: RequestContext, lines: readonly AppLine[], at: bigint): number {
      if (lines.length === 0) return 0;
      const requestId = bytesToText(request.requestId);
      const key = requestKey(request.appId, requestId);
      const first = lines.reduce((min, l) => (l.time < min ? l.time : min), lines[0]!.time);
      const stored = state.rows.get(key);
      if (stored) return flushInto(key, stored, request, lines, at, first);
      const seq = String(nextSeq());
      const { added, totals } = addLines(key, undefined, lines, requestId);
      const columns = recordColumns(placeholderRecord(first));
      const row: RequestRow = {
        ...columns,
        ...totals,
        // Finished (false) is set, as it reads back; the module only when the caller named it.
        set_fields: String(BigInt(columns.set_fields) | finishedSetBit | (request.moduleSet ? moduleSetBit : 0n)),
        app: request.appId,
        request_id: requestId,
        rkey: seq,
        created_at: String(at),
        seq,
        deleted: 0,
        has_record: 0,
        finished: 0,
        sort_time: String(at),
        updated_at: String(at),
        module_id: request.moduleId,
        version_id: request.versionId,
        record_bytes: "0",
        combined: "",
      };
      row.combined = placeholderCombined(row);
      save(key, row, undefined, added);
      if (added.length > 0 && notes.watchingLines) notes.lines({ request, lines: added });
      return added.length;
    },

    /** Expires a stored request: a tombstone version, its share of the rollups taken out. */
    expire(stored: RequestRow): void {
      const key = requestKey(stored.app, stored.request_id);
      save(key, { ...stored, seq: String(nextSeq()), deleted: 1 }, stored, []);
      const lines = state.lines.get(key);
      if (lines) {
        state.lines.delete(key);
        undoLog.push(() => state.lines.set(key, lines));
      }
    },
  };
}

export interface RequestWriter {
  changes: readonly Change[];
  /** Where the writes stand now, to undo back to. */
  mark(): number;
  /** Undoes everything since `mark` (a write that failed). */
  undo(mark: number): void;
  /** Upserts one record with its lines at server time `at`; returns how many lines were new. */
  writeRecord(record: PreparedRecord, at: bigint): number;
  /**
   * Stores app lines of one request (a placeholder until its record arrives); returns how many were new.
   */
  flushLines(request: RequestContext, lines: readonly AppLine[], at: bigint): number;
  /** Expires a stored request: a tombstone version, its share of the rollups taken out. */
  expire(stored: RequestRow): void;
}

/** The columns of a request version (requests' own, migration 001), in the order changeFields writes them. */
const rowColumns: readonly string[] = [
  "app", "request_id", "rkey", "created_at", "seq", "deleted", "has_record", "finished", "sort_time", "updated_at",
  "module_id", "version_id", "max_level", "line_count", "line_bytes", "record_bytes", "combined", "set_fields", "extra",
  ...fieldColumns.map((f) => f.name),
];

// changeFields writes the field columns by name in the schema's order: it must be fieldColumns' order.
const rowTextFields = "ip start_time end_time latency mcycles method resource http_version status response_size referrer user_agent url_map_entry host replica_index";
if (fieldColumns.map((f) => f.name).join(" ") !== rowTextFields) throw new Error("changeFields' field columns are not fieldColumns");

/** A text column's value; "" where a tombstone leaves it out (retention's carry only what they need). */
const text = (value: ColumnValue | undefined) => (value === undefined ? "" : tsvValue(value));
/** A number column's value (a number, or a 64-bit integer as text); 0 where a tombstone leaves it out. */
const num = (value: ColumnValue | undefined) => (value === undefined ? "0" : String(value));

/**
 * A change's TabSeparated fields, in `changeColumns`' order: the version's
 * columns (`rowColumns`), then `more` (its move, lines and rollup sums).
 * Written out column by column into one array joined once: it runs for
 * every version stored, where a map over the column names with a lookup
 * each took ~8 µs a record, and a template of the 34 columns made a string
 * for each of its ~70 joins.
 */
function changeFields(row: RequestRow, moved: string, prevSortTime: string, lineFields: string, rollupFields: string): string {
  return [
    text(row.app), text(row.request_id), num(row.rkey), num(row.created_at), num(row.seq), num(row.deleted),
    num(row.has_record), num(row.finished), num(row.sort_time), num(row.updated_at), text(row.module_id),
    text(row.version_id), num(row.max_level), num(row.line_count), num(row.line_bytes), num(row.record_bytes),
    text(row.combined), num(row.set_fields), text(row.extra), text(storedIp(row.ip as string)), num(row.start_time),
    num(row.end_time), num(row.latency), num(row.mcycles), text(row.method), text(row.resource),
    text(row.http_version), num(row.status), num(row.response_size), text(row.referrer), text(row.user_agent),
    text(row.url_map_entry), text(row.host), num(row.replica_index),
    moved, prevSortTime, lineFields, rollupFields,
  ].join("\t");
}

/** request_changes' columns (migration 003), in the order changeFields writes them. */
export const changeColumns: readonly string[] = [
  ...rowColumns,
  "moved", "prev_sort_time",
  "line_time", "line_pos", "line_level", "line_message",
  ...rollups.flatMap((rollup) => rollupColumns[rollup]),
];

const carriesNone: ReadonlyMap<Rollup, string[]> = new Map();
/** The rollup fields of a row that carries no sums. */
const noRollups = rollups.map((rollup) => noRollup(rollup).join("\t")).join("\t");

/**
 * A change as request_changes takes it (migration 003), one TabSeparated
 * line of `changeColumns`: the row, its move, its new lines, and the
 * rollup sums it carries (`carried`, rollup-deltas.ts; changesText).
 */
export function changeLine(change: Change, carried: ReadonlyMap<Rollup, string[]> = carriesNone): string {
  return `${changeText(change, carried)}\n`;
}

/** changeLine without its newline. */
function changeText({ row, prev, lines }: Change, carried: ReadonlyMap<Rollup, string[]>): string {
  const moved = prev && row.deleted === 0 && prev.sort_time !== row.sort_time ? "1" : "0";
  const lineFields =
    lines.length === 0
      ? "[]\t[]\t[]\t[]"
      : lines.length === 1
        ? `[${lines[0]!.time}]\t[${lines[0]!.pos}]\t[${lines[0]!.level}]\t${tsvStrings([lines[0]!.message])}`
        : `${tsvNumbers(lines.map((l) => String(l.time)))}\t${tsvNumbers(lines.map((l) => l.pos))}\t` +
          `${tsvNumbers(lines.map((l) => l.level))}\t${tsvStrings(lines.map((l) => l.message))}`;
  const rollupFields = carried.size === 0 ? noRollups : rollups.map((rollup) => (carried.get(rollup) ?? noRollup(rollup)).join("\t")).join("\t");
  return changeFields(row, moved, prev?.sort_time ?? "0", lineFields, rollupFields);
}

/**
 * Whose rollup sums a row carries: on one server a group's INSERT is stored
 * whole or not at all, so each app's sums of the whole group ride on its
 * last rows; on a cluster the Distributed table splits an INSERT into one per
 * shard, which may fail alone, so the sums are per request (whose rows are
 * all on one shard): what a shard stores, it stores with its rollups.
 */
export type RollupScope = "group" | "request";

/**
 * The changes of a group as one INSERT's TabSeparated text, the rollup sums
 * of each scope on its last rows: Usage on the last, Stats on the one
 * before, clients on the one before that (as far as the scope has rows). A
 * view's ARRAY JOIN copies every other column of the row it unfolds, long
 * arrays too: two rollups' sums on one row cost the product of their
 * lengths (330 ms of a 2,000-record insert's 550 when they shared one).
 */
export function changesText(changes: readonly Change[], scope: RollupScope): string {
  const keyOf = scope === "group" ? (row: RequestRow) => row.app : (row: RequestRow) => requestKey(row.app, row.request_id);
  const deltas = new Map<string, { sums: RollupDeltas; rows: number[] }>();
  changes.forEach(({ row, prev }, i) => {
    const key = keyOf(row);
    let scoped = deltas.get(key);
    if (!scoped) deltas.set(key, (scoped = { sums: createRollupDeltas(), rows: [] }));
    scoped.sums.add(row, prev);
    scoped.rows.push(i);
  });
  const carried = new Map<number, Map<Rollup, string[]>>();
  for (const { sums, rows } of deltas.values()) {
    rollups.forEach((rollup, r) => {
      const at = rows[Math.max(0, rows.length - 1 - r)]!;
      if (!carried.has(at)) carried.set(at, new Map());
      carried.get(at)!.set(rollup, sums.columns(rollup));
    });
  }
  // One join of the lines (a newline after each), not a string a line and its newline.
  const lines = changes.map((change, i) => changeText(change, carried.get(i) ?? carriesNone));
  if (lines.length > 0) lines.push("");
  return lines.join("\n");
}

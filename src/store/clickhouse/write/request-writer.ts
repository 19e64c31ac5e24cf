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
  recordExtra,
  recordSetFields,
  requestKey,
  startLeftOut,
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

/** The kinds of the writer's undo entries (createRequestWriter). */
const undoRow = 0;
const undoLines = 1;
const undoLine = 2;
const undoChange = 3;

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
  /**
   * What `undo` puts back, three slots an entry (its kind and two values):
   * no closure a write (there were three a record stored).
   */
  const undoLog: unknown[] = [];
  /** The totals addLines works out, read at once by its caller (one object a writer, not one a record). */
  const totals = { max_level: -1, line_count: "0", line_bytes: "0" };
  /** A group's writes mostly share their time `at`: its text is made once. */
  let lastAt = -1n;
  let lastAtText = "";
  const atTextOf = (at: bigint) => {
    if (at !== lastAt) {
      lastAt = at;
      lastAtText = String(at);
    }
    return lastAtText;
  };

  function setRow(key: string, row: RequestRow | undefined): void {
    undoLog.push(undoRow, key, state.rows.get(key));
    if (row) state.rows.set(key, row);
    else state.rows.delete(key);
  }

  /** Sets (or, with `set` undefined, forgets) the request's known lines, to be put back by undo. */
  function setLines(key: string, set: Set<string> | undefined): void {
    undoLog.push(undoLines, key, state.lines.get(key));
    if (set) state.lines.set(key, set);
    else state.lines.delete(key);
  }

  /** The request's known lines; `fresh` starts a new incarnation with none. */
  function linesOf(key: string, fresh: boolean): Set<string> {
    const before = state.lines.get(key);
    if (before && !fresh) return before;
    const set = new Set<string>();
    setLines(key, set);
    return set;
  }

  /**
   * Keeps the lines not stored yet, returned; the new totals of `row`
   * (absent: a new request), within the cap, in `totals`.
   */
  function addLines(key: string, row: RequestRow | undefined, lines: readonly AppLine[], requestId: string): readonly AppLine[] {
    if (lines.length === 0) {
      // No lines (most records): no set of known lines made. A new incarnation still forgets the old one's.
      if (row === undefined && state.lines.has(key)) setLines(key, undefined);
      totals.max_level = row?.max_level ?? -1;
      totals.line_count = row === undefined ? "0" : String(row.line_count);
      totals.line_bytes = row === undefined ? "0" : String(row.line_bytes);
      return noLines;
    }
    const known = linesOf(key, row === undefined);
    const added: AppLine[] = [];
    let bytes = 0;
    let maxLevel = row?.max_level ?? -1;
    for (const line of lines) {
      const k = lineKey(line);
      if (line.level > maxLevel) maxLevel = line.level;
      if (known.has(k)) continue;
      known.add(k);
      undoLog.push(undoLine, known, k);
      added.push(line);
      bytes += lineWireBytes(line);
    }
    // Totals stay far below 2^53 (the cap): exact as doubles, no BigInt a record.
    const lineCount = Number(row?.line_count ?? 0) + added.length;
    const lineBytes = Number(row?.line_bytes ?? 0) + bytes;
    if (added.length > 0) checkRequestLines(lineCount, lineBytes, cap, requestId);
    totals.max_level = maxLevel;
    totals.line_count = String(lineCount);
    totals.line_bytes = String(lineBytes);
    return added;
  }

  function save(key: string, row: RequestRow, prev: RequestRow | undefined, lines: readonly AppLine[]): void {
    setRow(key, row.deleted === 1 ? undefined : row);
    changes.push({ row, prev, lines });
    undoLog.push(undoChange, undefined, undefined);
  }

  /** Adds lines to a stored request: a change; an in-progress request moves to `at`. */
  function flushInto(key: string, stored: RequestRow, request: NewLines["request"], lines: readonly AppLine[], at: bigint, first: bigint): number {
    if (lines.length === 0) return 0;
    const added = addLines(key, stored, lines, stored.request_id);
    if (added.length > 0 && notes.watchingLines) notes.lines({ request, lines: added });
    const row: RequestRow = {
      ...stored,
      ...totals,
      seq: String(nextSeq()),
      updated_at: atTextOf(at),
      sort_time: stored.finished === 1 ? stored.sort_time : atTextOf(at),
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
      while (undoLog.length > mark) {
        const b = undoLog.pop();
        const a = undoLog.pop();
        const kind = undoLog.pop();
        if (kind === undoRow) {
          if (b) state.rows.set(a as string, b as RequestRow);
          else state.rows.delete(a as string);
        } else if (kind === undoLines) {
          if (b) state.lines.set(a as string, b as Set<string>);
          else state.lines.delete(a as string);
        } else if (kind === undoLine) {
          (a as Set<string>).delete(b as string);
        } else {
          changes.pop();
        }
      }
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
      const added = addLines(key, stored, record.lines, requestId);
      // Set as isFieldSet has it for proto2: an own property, not undefined.
      const bits = recordSetFields(
        log,
        (Object.hasOwn(log, "moduleId") && log.moduleId !== undefined ? moduleSetFlag : 0) +
          (Object.hasOwn(log, "finished") && log.finished !== undefined ? finishedSetFlag : 0),
      );
      const atText = atTextOf(at);
      // Every column, in rowColumns' order: one object shape for every version
      // written; the field columns as recordColumns makes them, written out here
      // (no object of them a record).
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
        set_fields: String(bits),
        extra: recordExtra(log),
        ip: log.ip,
        start_time: startLeftOut(bits) ? "0" : String(log.startTime),
        end_time: log.finished ? "0" : String(log.endTime),
        latency: String(log.latency),
        mcycles: String(log.mcycles),
        method: log.method,
        resource: log.resource,
        http_version: log.httpVersion,
        status: log.status,
        response_size: String(log.responseSize),
        referrer: log.referrer,
        user_agent: log.userAgent,
        url_map_entry: log.urlMapEntry,
        host: log.host,
        replica_index: log.replicaIndex,
      };
      // Newly finished: not stored finished before (a finished record sent again or rewritten was).
      if (log.finished && !(stored && stored.has_record === 1 && stored.finished === 1) && notes.watching) {
        // The row's facts are the record's (its columns hold the record's values, defaults where unset), and the Stats rollup asks for them again.
        notes.finished({ log, facts: rowStatsFacts(row), maxLevel: row.max_level });
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
      const added = addLines(key, undefined, lines, requestId);
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
      if (state.lines.has(key)) setLines(key, undefined);
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

/** The fields of the line changeFields writes: one array, filled again for every line (no array a line). */
const fieldsOfLine: string[] = new Array<string>(38).fill("");

/**
 * A change's TabSeparated line (without its newline), in `changeColumns`'
 * order: the version's columns (`rowColumns`), then its move, lines and
 * rollup sums. Written out column by column into one array joined once: it
 * runs for every version stored, where a map over the column names with a
 * lookup each took ~8 µs a record, and a template of the 34 columns made a
 * string for each of its ~70 joins.
 */
function changeFields(row: RequestRow, moved: string, prevSortTime: string, lines: string, rollupFields: string): string {
  const f = fieldsOfLine;
  f[0] = text(row.app); f[1] = text(row.request_id); f[2] = num(row.rkey); f[3] = num(row.created_at); f[4] = num(row.seq);
  f[5] = num(row.deleted); f[6] = num(row.has_record); f[7] = num(row.finished); f[8] = num(row.sort_time);
  f[9] = num(row.updated_at); f[10] = text(row.module_id); f[11] = text(row.version_id); f[12] = num(row.max_level);
  f[13] = num(row.line_count); f[14] = num(row.line_bytes); f[15] = num(row.record_bytes); f[16] = text(row.combined);
  f[17] = num(row.set_fields); f[18] = text(row.extra); f[19] = text(storedIp(row.ip as string)); f[20] = num(row.start_time);
  f[21] = num(row.end_time); f[22] = num(row.latency); f[23] = num(row.mcycles); f[24] = text(row.method);
  f[25] = text(row.resource); f[26] = text(row.http_version); f[27] = num(row.status); f[28] = num(row.response_size);
  f[29] = text(row.referrer); f[30] = text(row.user_agent); f[31] = text(row.url_map_entry); f[32] = text(row.host);
  f[33] = num(row.replica_index); f[34] = moved; f[35] = prevSortTime; f[36] = lines; f[37] = rollupFields;
  return f.join("\t");
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

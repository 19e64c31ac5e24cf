import type { Clock } from "../../../clock.js";
import type { ReadPlan } from "../../../query/read-plan.js";
import { ReqlogError } from "../../../reqlog-error.js";
import type { ReadResult } from "../../store.js";
import { checkRequestIdBytes, createPageBytes, pageBytesOf } from "../../../query/page-bytes.js";
import { decodeCursor, encodeCursor, type ClickHouseCursor } from "./cursor.js";
import { and, planFilters, scanFilters, timeRange } from "./plan-sql.js";
import type { RecordReader } from "./record-reader.js";
import { candidatesPerRound, type SearchIndex, type SearchKeys } from "./search-index.js";
import { hourOf, usecPerHour } from "../rows/hours.js";
import { type RequestRow, requestsRead, selectStoredAsWritten } from "../rows/request-row.js";
import type { SqlClient } from "../sql-client.js";
import { bytesToText, sqlInt, sqlList, sqlString } from "../rows/sql-literal.js";
import { heldSql, holds, type Snapshot } from "./snapshot.js";
import { rowsWithin, type StoredHours, widthFor } from "./stored-hours.js";

/** A record in a page's scan: where it stands in the snapshot's order; changed records come whole. */
interface Candidate {
  sortTime: bigint;
  rkey: bigint;
  requestId: string;
  changed?: RequestRow;
}

/**
 * A row of the scan of unchanged records: a match, or the last row
 * examined. `row`: the match's latest version as the scan read it (whole,
 * every filter passed), which a page takes as it is when no version of the
 * app was stored past the snapshot by the time the changes are looked for.
 */
interface ScanRow extends Candidate {
  matches: boolean;
  row?: RequestRow;
}

/** A match of a scan: a version of a request (64-bit integers as text); `row`: it whole, when the scan read it (firstMatches). */
interface Hit {
  sort_time: string;
  rkey: string;
  request_id: string;
  seq: string;
  row?: RequestRow;
}

/** How many rows a scan examines and the last of them (64-bit integers as text, a tuple as an array). */
interface ScanExtent {
  examined: string;
  /** Sort time and rkey of the last row examined (the oldest). */
  oldest: [string, string];
}

/**
 * Rows a scan may examine per millisecond of a Read's time budget.
 * ClickHouse cannot stop a query at an exact row once time is up, and a
 * page must end at an exact row; so the time budget caps the rows examined,
 * at about the rate ClickHouse filters them.
 */
const scanRowsPerMs = 10_000;

/** The rows a plan's scan may examine (the row past them is examined too). */
const scanRows = (plan: ReadPlan) => Math.min(plan.budget.rows, plan.budget.ms * scanRowsPerMs);

/**
 * A scan's first window of sort time (µs) and its widest (then it takes all
 * that is left). On 18.16 at 10M requests of an app, the newest rows within
 * a minute or ten take 50–100 ms with FINAL, all of them 2.5 s.
 */
const firstWindowUs = 60_000_000n;
const widestWindowUs = firstWindowUs * 10n ** 7n;

/**
 * A regex Read reads its candidates from the search index when they are at
 * most this many postings (and at most its row budget); with more, the
 * pattern is not selective and a scan fills a page soon (as on SQLite).
 */
const maxCandidates = 20_000;
/** A range of at most this many records (by the hours it touches) is scanned, not searched in the index. */
export const indexFromRows = 2_000;

const newer = (a: Candidate, b: Candidate) => a.sortTime > b.sortTime || (a.sortTime === b.sortTime && a.rkey > b.rkey);

/** A window of a scan (scanWindows): its conditions, whether it is the last, and about how many records the scan's range holds (0: not looked up). */
interface ScanWindow {
  window: string[];
  last: boolean;
  requests: number;
}

/**
 * A scan's last window over a range of more records than this (by the
 * Usage hours) counts them without FINAL first (unchangedScan); over fewer,
 * the exact count is cheap and comes beside the search, as in the others.
 */
const roughFromRows = 100_000;

/** Where a scan's windows start and end, and about how many records lie between (storedSpan). */
interface StoredSpan {
  from: bigint;
  oldest: bigint;
  requests: number;
  /** The records of each hour between, when they are at most maxSpreadHours hours: what sizes a pattern's windows. */
  spread?: StoredHours;
}

/** The most hours storedSpan reads each one's records of (about 2.3 years of hours; beyond, windows are sized by time). */
const maxSpreadHours = 20_000;

/** Where paging history stands: offsets of snapshots taken before `floor` (µs, the backend's clock) have expired. */
export interface PagingHistory {
  floor: bigint;
}

/**
 * Read's pages on ClickHouse: newest first by sort time, keyset-paged from a
 * snapshot, as the SQLite backend pages (its snapshot-paging.ts). A first
 * page takes every server's marks as its snapshot (snapshot.ts); its
 * cursors carry them, so later pages, through any server, walk the order as
 * it stood then: records unchanged since (latest version held by the
 * snapshot) come from a scan of `positions FINAL` in (sort time, rkey)
 * order, records changed since are put where they stood (their first move
 * the snapshot does not hold), and records created since are left out.
 *
 * ClickHouse scans the unchanged records to the plan's budget and applies
 * its filters; only the matches a page can take and the last row examined
 * come back (unchangedScan), and the matching records are then read whole
 * (a pattern's scan reads them whole itself: firstMatches).
 */
export function createSnapshotPaging(
  sql: SqlClient,
  records: RecordReader,
  /** The marks now (server-slots.ts): a first page's snapshot. */
  marks: () => Promise<Snapshot>,
  history: PagingHistory,
  now: Clock,
  /**
   * The search index (migration 005) and the fewest records (by the hours
   * a range touches) a regex Read asks it for (indexFromRows; 0: always);
   * none: regex Reads scan.
   */
  search?: { index: SearchIndex; fromRows: number },
  /**
   * Tables are Distributed over shards: a subquery's set must be GLOBAL
   * (found once, sent to every shard). On one node a plain IN, which 18.16
   * uses on the primary key; with GLOBAL IN it reads every granule of the app.
   */
  onCluster = false,
): SnapshotPaging {
  const inSet = onCluster ? "GLOBAL IN" : "IN";
  async function floorNow(signal: AbortSignal): Promise<bigint> {
    const [row] = await sql.rows<{ floor: string }>("SELECT max(toInt64(value)) AS floor FROM meta WHERE key = 'moves_floor'", signal);
    const floor = BigInt(row?.floor ?? "0");
    if (floor > history.floor) history.floor = floor;
    return history.floor;
  }

  /**
   * Whether a version of the app past the snapshot may be stored: the
   * highest number of each slot among the app's versions (app_seqs,
   * migration 004), held by the snapshot or not. Most pages of a Read that
   * no write races find none, and skip the search of changed records.
   */
  async function changedAfter(app: string, snapshot: Snapshot, signal: AbortSignal): Promise<boolean> {
    const tops = await sql.rows<{ seq: string }>(`SELECT max(top) AS seq FROM app_seqs WHERE app = ${sqlString(app)} GROUP BY slot`, signal);
    return tops.some((t) => !holds(snapshot, BigInt(t.seq)));
  }

  /**
   * Records that existed at the snapshot and changed since, with the sort
   * time each had then, newest first; `none`: no version of the app past
   * the snapshot is stored (then every version the scan read is still its
   * request's latest).
   */
  async function changedSince(plan: ReadPlan, snapshot: Snapshot, after: ClickHouseCursor | undefined, signal: AbortSignal) {
    // (A group being inserted may have stored its rows already, moving records
    // away from where the scan looks: they are changes past the snapshot,
    // and app_seqs has them before any other table does.)
    if (!(await changedAfter(plan.appId, snapshot, signal))) return { none: true, changed: [] };
    const app = sqlString(plan.appId);
    // Not FINAL over the app (which merges every column of every row of it:
    // seconds at 10M requests while writes go on): the ids with a version
    // past the snapshot (one column read, the seq), then their latest
    // versions by key. (GLOBAL: on a cluster the ids are found once, then
    // sent to every shard.)
    const rows = await sql.rows<RequestRow>(
      `SELECT * FROM ${requestsRead(`
         WHERE app = ${app} AND request_id GLOBAL IN (${selectStoredAsWritten("request_id", `WHERE app = ${app} AND NOT ${heldSql("seq", snapshot)}`)})
         ORDER BY request_id, seq DESC LIMIT 1 BY request_id`)}
       WHERE ${heldSql("rkey", snapshot)} AND deleted = 0 AND ${and(planFilters(plan))}`,
      signal,
    );
    if (rows.length === 0) return { none: false, changed: [] };
    const moves = await sql.rows<{ rkey: string; old: string }>(
      `SELECT rkey, argMin(old_sort_time, seq) AS old FROM moves
       WHERE app = ${app} AND NOT ${heldSql("seq", snapshot)} AND rkey IN ${sqlList(rows.map((r) => r.rkey))}
       GROUP BY rkey`,
      signal,
    );
    const stoodAt = new Map(moves.map((m) => [m.rkey, BigInt(m.old)]));
    const changed = rows
      .map((row): Candidate => ({
        sortTime: stoodAt.get(row.rkey) ?? BigInt(row.sort_time),
        rkey: BigInt(row.rkey),
        requestId: row.request_id,
        changed: row,
      }))
      .filter(
        (c) =>
          (plan.startTime === undefined || c.sortTime >= plan.startTime) &&
          (plan.endTime === undefined || c.sortTime < plan.endTime) &&
          (!after || c.sortTime < after.sortTime || (c.sortTime === after.sortTime && c.rkey < after.rkey)),
      )
      .sort((a, b) => (newer(a, b) ? -1 : 1));
    return { none: false, changed };
  }

  /**
   * The scan of records unchanged since the snapshot, newest first from after
   * the cursor, as far as the budget goes, over `positions` (migration 002):
   * how many rows the scan examines and the last of them (the oldest), and
   * the first matches (as many as a page can take). Only those cross the
   * wire, and they are all a page needs to end exactly where a scan row by
   * row would: after its last match, or at the row past the budget (taken
   * when it matches).
   *
   * ClickHouse 18.16 cannot read a key in order and stop, but reads a range
   * of it cheaply: the scan reads windows of sort time in turn (scanWindows),
   * each a search of its own, and stops at the window where the page is full
   * or the budget spent; what it finds is what one search over every window
   * up to there finds. Patterns are tested on `requests` (positions have no
   * combined line or host), a window at a time too: `requests` is not
   * ordered by time, but its sort times are read first (one column), and
   * only the window's rows have their line derived and matched; positions
   * still count the rows examined.
   */
  async function unchangedScan(plan: ReadPlan, snapshot: Snapshot, after: ClickHouseCursor | undefined, signal: AbortSignal) {
    const scope = [`app = ${sqlString(plan.appId)}`, ...timeRange(plan), heldSql("seq", snapshot), "deleted = 0"];
    if (after) {
      scope.push(`sort_time <= ${sqlInt(after.sortTime)}`);
      scope.push(`(sort_time < ${sqlInt(after.sortTime)} OR rkey < ${sqlInt(after.rkey)})`);
    }
    const rows = scanRows(plan);
    const wanted = plan.count + 1;
    const bound = after?.sortTime ?? plan.endTime;
    const from = bound ?? now();
    let known: StoredSpan | undefined;
    if (search && plan.combinedRegex !== undefined) {
      // Which keys narrow the pattern, asked beside how much the range holds
      // (one round trip): few rows are scanned as fast as the index is asked,
      // and a scan is what the budget stops: as on SQLite, the index is for
      // ranges of more. Undefined keys: the index cannot narrow the pattern to
      // maxCandidates (and the budget), and a scan reads instead.
      const limit = Math.min(maxCandidates, rows);
      const [span, keys] = await Promise.all([
        storedSpan(plan, from, bound !== undefined, signal, true),
        search.index.keysOf(plan.appId, plan.combinedRegex, limit, signal),
      ]);
      if (span === null) return { found: [] };
      if (keys && span.requests > search.fromRows) return { found: await indexedScan(keys, plan, scope, after, signal) };
      known = span;
    }
    const extent = (where: readonly string[], limit?: number) =>
      sql.rows<ScanExtent>(
        `SELECT count() AS examined, min((sort_time, rkey)) AS oldest FROM ` +
          (limit === undefined
            ? `positions FINAL WHERE ${and(where)}`
            : `(SELECT sort_time, rkey FROM positions FINAL WHERE ${and(where)} ORDER BY sort_time DESC, rkey DESC LIMIT ${sqlInt(limit)})`),
        signal,
      );
    const patterns = plan.hostRegex !== undefined || plan.combinedRegex !== undefined;
    const matchesIn = (where: readonly string[], window: readonly string[], limit: number) =>
      patterns
        ? firstMatches(plan, where, window, limit, signal)
        : sql.rows<Hit>(
            `SELECT sort_time, rkey, request_id, seq FROM positions FINAL WHERE ${and([...where, ...planFilters(plan)])}
             ORDER BY sort_time DESC, rkey DESC LIMIT ${sqlInt(limit)}`,
            signal,
          );

    let examined = 0;
    let oldestKey: [string, string] | undefined;
    const hits: Hit[] = [];
    /**
     * The next window of a pattern's scan: as wide as the rows the page
     * still needs take (1.5 times the rows the matches so far say it needs,
     * at most the budget's), by each hour's records when the span has them
     * (then at least twice the rows so far), else by the rows a µs of the
     * windows so far held and at least ten times the last. Each window reads the sort time of every request
     * of the app (`requests` is not ordered by time): a 5xx Read of 1,000
     * read five windows to fill its page, where two do.
     */
    const grow = (width: bigint, span: StoredSpan | undefined, from: bigint) => {
      // (Only a pattern's scan reads each hour's records: storedSpan's withHours.)
      const spread = span?.spread;
      if (spread) {
        // By the hours' records (or the rows examined, where records lie
        // closer than the hours tell: in progress, at the time of their last
        // write): twice the rows so far at least, or as many more as the
        // matches so far say the page needs (when none matched, tenfold and
        // at least ten pages); all that is left when the hours hold no more.
        const had = Math.max(rowsWithin(spread, from, width), examined);
        const more = hits.length === 0
          ? Math.max(9 * had, 10 * wanted - had)
          : Math.max(had, 1.5 * Math.min(rows + 1 - examined, ((wanted - hits.length) * examined) / hits.length));
        // (Always wider than the last: rows the hours do not tell of, such as a
        // request whose position retention dropped first, never narrow it.)
        const wide = widthFor(spread, from, had + more) ?? widestWindowUs;
        return wide > width ? wide : width * 10n;
      }
      const tenfold = width * 10n;
      if (!patterns || examined === 0) return tenfold;
      const needed = 1.5 * Math.min(rows + 1 - examined, ((wanted - hits.length) * examined) / Math.max(hits.length, 1));
      const wide = width + BigInt(Math.ceil((needed * Number(width)) / examined));
      return wide > tenfold ? wide : tenfold;
    };
    // A pattern's first window below where the hours of the range say the
    // records start: about ten times the rows a page takes (by each hour's
    // records, stored-hours.ts; for a range of more hours than those are read
    // of, by the rows a µs of the range, and at least a minute), so that its
    // matches tell how wide the next must be. A range of at most five times
    // that is one window: a statement more (the sort times of the app read
    // again, the matches read whole twice) costs more than the lines of the
    // rows it would spare. (Found after a first window of a minute, the
    // hours size the next only when each hour's records were read.)
    const firstFor = (span: StoredSpan): bigint => {
      if (!patterns || span.requests === 0) return firstWindowUs;
      if (span.requests <= 50 * wanted) return widestWindowUs;
      if (span.spread) return widthFor(span.spread, span.from, 10 * wanted) ?? widestWindowUs;
      const perRows = Number(span.from - span.oldest) / span.requests;
      const wide = BigInt(Math.ceil(10 * wanted * perRows));
      return wide > firstWindowUs ? wide : firstWindowUs;
    };
    const restart = (span: StoredSpan) => (span.spread ? firstFor(span) : firstWindowUs);
    const first = known ? firstFor(known) : firstWindowUs;
    for await (const { window, last, requests } of scanWindows(plan, from, signal, first, grow, restart, patterns, known)) {
      const where = [...scope, ...window];
      // (On a cluster, each shard sums up its own rows.) The last window of a
      // pattern's scan of many rows, all that is left of the range, may fill the page
      // within the budget: then it needs no exact count, whose FINAL merges
      // every position left (a third of a 5xx regex Read at 200k requests);
      // the versions counted without FINAL are at least as many. Else the
      // exact count follows (one round trip more, in the last window only).
      const rough = last && patterns && requests > roughFromRows;
      const [[counted], found] = await Promise.all([
        rough ? sql.rows<ScanExtent>(`SELECT count() AS examined FROM positions WHERE ${and(where)}`, signal) : extent(where),
        matchesIn(where, window, wanted - hits.length),
      ]);
      hits.push(...found);
      if (rough && hits.length >= wanted && examined + Number(counted!.examined) <= rows) {
        // The page ends at its last match, before the budget: as if the scan stopped there.
        oldestKey = [hits.at(-1)!.sort_time, hits.at(-1)!.rkey];
        break;
      }
      const [whole] = rough ? await extent(where) : [counted];
      // The row past the budget is examined too (as on SQLite): rows + 1. Only
      // when there are more does ClickHouse sort them to find where it stands.
      const inWindow = Number(whole!.examined);
      const [scanned] = examined + inWindow > rows + 1 ? await extent(where, rows + 1 - examined) : [whole];
      if (scanned!.examined !== "0") oldestKey = scanned!.oldest;
      examined += Number(scanned!.examined);
      if (examined > rows || hits.length >= wanted) break;
    }
    if (oldestKey === undefined) return { found: [] };
    const oldest: ScanRow = { sortTime: BigInt(oldestKey[0]), rkey: BigInt(oldestKey[1]), requestId: "", matches: false };
    // The matches up to the last row examined (those past it are past the budget).
    const found = hits
      .map((h): ScanRow => ({ sortTime: BigInt(h.sort_time), rkey: BigInt(h.rkey), requestId: h.request_id, matches: true, row: h.row }))
      .filter((h) => !newer(oldest, h));
    const last = found.at(-1);
    const end = last && last.sortTime === oldest.sortTime && last.rkey === oldest.rkey ? last : oldest;
    if (end === oldest) found.push(oldest);
    return { found, spentAt: examined > rows ? end : undefined };
  }

  /**
   * The sort times of a search's candidates (unordered): those with a
   * posting under its keys and, when it has more key sets (alsoUnder),
   * under one of each too (one pass over all of their postings, grouped by
   * sort time).
   */
  function candidatesSql(found: SearchKeys, app: string, range: readonly string[]) {
    if (found.alsoUnder.length === 0) return `SELECT DISTINCT sort_time FROM search_postings WHERE ${and([app, `key IN ${sqlList(found.keys)}`, ...range])}`;
    const sets = [found.keys, ...found.alsoUnder];
    const every = [...new Set(sets.flat())];
    return `SELECT sort_time FROM search_postings WHERE ${and([app, `key IN ${sqlList(every)}`, ...range])}
      GROUP BY sort_time HAVING ${sets.map((keys) => `max(key IN ${sqlList(keys)}) = 1`).join(" AND ")}`;
  }

  /**
   * The scan of unchanged records for a combined_log_regex, from its
   * candidates in the search index (search-index.ts), a round of candidates
   * at a time (newest first from the cursor) until the page is full. Each
   * round's sort times come first (`search_postings` under the keys, by its
   * key; under those of every set it has: candidatesSql), below the last
   * round's oldest: rounds by offset into the candidates as they stand at
   * each round would take a candidate twice when a write adds a newer one
   * between rounds, and skip one when a Delete takes one away. Then one
   * statement reads only what they lie in: the ids of
   * the requests that stood there (`positions` by its key, without FINAL:
   * any version that stood there names its request), and the latest
   * versions of those requests (`requests` by its key: the ids first, in
   * PREWHERE, so that the other columns are read only where they are),
   * kept when they are unchanged since the snapshot (`scope`: the latest
   * version is held by it, so the request stands where that version put
   * it), stand at one of the round's sort times and pass every filter (RE2
   * among them). A request that changed since is among the changed records
   * (changedSince). It examines only candidates, so the budget never stops
   * it; the rows come whole, and a page takes them as they are when no
   * version of the app was stored past the snapshot since.
   */
  async function indexedScan(found: SearchKeys, plan: ReadPlan, scope: readonly string[], after: ClickHouseCursor | undefined, signal: AbortSignal) {
    const hits: ScanRow[] = [];
    if (found.keys.length === 0) return hits;
    const app = `app = ${sqlString(plan.appId)}`;
    const range = [...timeRange(plan), ...(after ? [`sort_time <= ${sqlInt(after.sortTime)}`] : [])];
    const filters = planFilters(plan);
    // (On a cluster the ids are found once, on every shard's rows, then sent to every shard: inSet.)
    for (let below: bigint | undefined; hits.length < plan.count + 1; ) {
      const times = await sql.rows<{ sort_time: string }>(
        `${candidatesSql(found, app, [...range, ...(below === undefined ? [] : [`sort_time < ${sqlInt(below)}`])])}
         ORDER BY sort_time DESC LIMIT ${sqlInt(candidatesPerRound)}`,
        signal,
      );
      if (times.length === 0) break;
      const round = sqlList(times.map((t) => sqlInt(BigInt(t.sort_time))));
      const stood = `SELECT request_id FROM positions PREWHERE ${app} AND sort_time IN ${round}`;
      const rows = await sql.rows<RequestRow>(
        `SELECT * FROM ${requestsRead(`PREWHERE ${app} AND request_id ${inSet} (${stood}) ORDER BY request_id, seq DESC LIMIT 1 BY request_id`)}
         WHERE ${and([...scope, `sort_time IN ${round}`, ...filters])}`,
        signal,
      );
      const matched = rows
        .map((row): ScanRow => ({ sortTime: BigInt(row.sort_time), rkey: BigInt(row.rkey), requestId: row.request_id, matches: true, row }))
        .sort((a, b) => (newer(a, b) ? -1 : 1));
      hits.push(...matched);
      if (times.length < candidatesPerRound) break;
      below = BigInt(times.at(-1)!.sort_time);
    }
    return hits.slice(0, plan.count + 1);
  }

  /**
   * Where a scan's windows start and how far down they need to go: `from`
   * (the cursor, the end time, or now: not `bounded`, and then what sorts
   * after it counts too), or the end of the newest hour below it that holds
   * a request of the app, and the start of the oldest such hour (null: none
   * does). So windows far
   * above the data (an old store, a cursor after a gap) or below it (a page
   * that is not full) cost no round trips that find nothing. Asked of
   * usage_hourly, whose hours of sort time hold a share of every stored
   * request (a record, or a placeholder's lines): a row per hour and
   * version, not the requests. It is the store as it is now; a request
   * that moved or went since the snapshot is not among the unchanged ones
   * the windows look for anyway. With it, how many records the hours hold
   * (more than the range: whole hours).
   */
  async function storedSpan(plan: ReadPlan, from: bigint, bounded: boolean, signal: AbortSignal, withHours: boolean): Promise<StoredSpan | null> {
    // (Unbounded, from is now: the first window takes what sorts after it too.)
    const highest = bounded ? ` AND hour <= ${sqlInt(hourOf(from))}` : "";
    const lowest = plan.startTime === undefined ? "" : ` AND hour >= ${sqlInt(hourOf(plan.startTime))}`;
    const [row] = await sql.rows<{ newest: string; oldest: string; hours: string; requests: string; hs: string[]; rs: string[] }>(
      `SELECT max(hour) AS newest, min(hour) AS oldest, count() AS hours, sum(r) AS requests,
         ${withHours ? `groupArray(${maxSpreadHours + 1})(hour)` : "emptyArrayInt64()"} AS hs,
         ${withHours ? `groupArray(${maxSpreadHours + 1})(r)` : "emptyArrayInt64()"} AS rs FROM (
         SELECT hour, sum(requests) AS r FROM usage_hourly WHERE app = ${sqlString(plan.appId)}${highest}${lowest}
         GROUP BY hour HAVING r != 0 OR sum(lines) != 0)`,
      signal,
    );
    if (row!.hours === "0") return null;
    const end = (BigInt(row!.newest) + 1n) * usecPerHour;
    const span: StoredSpan = { from: end < from ? end : from, oldest: BigInt(row!.oldest) * usecPerHour, requests: Number(row!.requests) };
    if (withHours && row!.hs.length <= maxSpreadHours) {
      // (Both arrays are gathered from the same rows in the same order.)
      const order = row!.hs.map((h, i) => ({ hour: Number(h), requests: Math.max(0, Number(row!.rs[i])) })).sort((a, b) => b.hour - a.hour);
      span.spread = { hours: order.map((o) => o.hour), requests: order.map((o) => o.requests) };
    }
    return span;
  }

  /**
   * The windows of sort time a scan reads in turn, newest first, as
   * conditions (and whether it is the last): the newest `first` µs (a
   * minute, or more) below where it starts (the cursor, the
   * plan's end time or now; a first window also takes what sorts after
   * now), then each reaching as far below the start as `grow` says (always
   * further than the last), until one reaches the plan's start time or
   * spans ~19 years (the last takes all that is left).
   * When the first window leaves the page short, the hours of requests
   * below it are looked up (storedSpan): the windows go on from the newest
   * of them (as wide as `restart` says: a minute again, or by the hours'
   * records; a gap costs no round trips that find nothing) and stop at the
   * oldest. `known`: those hours, looked up
   * already (from `start`): the first window starts at the newest.
   */
  async function* scanWindows(
    plan: ReadPlan,
    start: bigint,
    signal: AbortSignal,
    first: bigint,
    grow: (width: bigint, span: StoredSpan | undefined, from: bigint) => bigint,
    restart: (span: StoredSpan) => bigint,
    /** Whether a span looked up reads each hour's records too (a pattern's scan: `grow` and `restart` size by them). */
    withHours: boolean,
    known?: StoredSpan,
  ): AsyncGenerator<ScanWindow> {
    let from = known ? known.from : start;
    let span = known;
    let oldest = known?.oldest;
    let requests = known?.requests ?? 0;
    let upper: bigint | undefined;
    for (let width = first; ; ) {
      const lower = from - width;
      const last =
        width >= widestWindowUs || (oldest !== undefined && lower <= oldest) || (plan.startTime !== undefined && lower <= plan.startTime);
      yield { window: [...(upper === undefined ? [] : [`sort_time < ${sqlInt(upper)}`]), ...(last ? [] : [`sort_time >= ${sqlInt(lower)}`])], last, requests };
      if (last) return;
      upper = lower;
      if (oldest === undefined) {
        // The first window did not fill the page: where the rest of the data lies.
        const found = await storedSpan(plan, upper, true, signal, withHours);
        if (found === null) return;
        span = found;
        oldest = found.oldest;
        requests = found.requests;
        if (found.from < upper) {
          [from, width] = [found.from, restart(found)];
          continue;
        }
      }
      width = grow(width, span, from);
    }
  }

  /**
   * The newest matches of the scan (as many as a page can take): the
   * versions that pass the filters, newest first, each kept when it is its
   * request's latest version. Without FINAL (which merges every column the
   * filters read, of every row: most of a scan's cost when the combined line
   * is derived), ClickHouse reads the columns as a plain table; the latest
   * versions are then read whole by key, for as many of the ids found, newest
   * first, as the page can take (then once more for as many as are still
   * missing): a page takes them as they are (`row`) when no version of the
   * app was stored past the snapshot by the time the changes are looked
   * for, and reads none of them again. Exact when it finds enough matches or
   * finds every matching version; else (many matching versions superseded)
   * the same search runs on requests FINAL.
   */
  async function firstMatches(plan: ReadPlan, scope: readonly string[], window: readonly string[], wanted: number, signal: AbortSignal): Promise<Hit[]> {
    const filters = scanFilters(plan);
    const order = "ORDER BY sort_time DESC, rkey DESC LIMIT";
    // `requests` is not ordered by time: the window's sort times are tested
    // first (PREWHERE, one column), so that the combined line is derived and
    // matched only for the rows in the window. (Not with FINAL, which would
    // merge what is left: a version moved out of the window would leave its
    // old one looking like the latest.)
    const source = (final: boolean) => `${final ? "FINAL" : window.length > 0 ? `PREWHERE ${and(window)}` : ""} WHERE ${[...scope, ...filters.first].join(" AND ")}`;
    const search = (final: boolean, limit: number) =>
      sql.rows<Hit>(
        filters.then.length === 0
          ? // Sorted and cut inside when there is no second stage: on a cluster, each shard then sorts and limits its own rows.
            `SELECT sort_time, rkey, request_id, seq FROM ${requestsRead(`${source(final)} ${order} ${sqlInt(limit)}`)} ${order} ${sqlInt(limit)}`
          : `SELECT sort_time, rkey, request_id, seq
             FROM (SELECT ${["sort_time", "rkey", "request_id", "seq", ...filters.columns].join(", ")} FROM ${requestsRead(source(final))})
             WHERE ${and(filters.then)} ${order} ${sqlInt(limit)}`,
        signal,
      );
    const limit = 2 * wanted;
    const versions = await search(false, limit);
    const hits: Hit[] = [];
    // (A version is its request's latest when the latest that exists is that
    // version: deleted or not passing the filters, it is not.)
    for (let at = 0, round = 0; at < versions.length && hits.length < wanted; round++) {
      const next = round === 0 ? versions.slice(at, at + wanted) : versions.slice(at);
      at += next.length;
      const latest = new Map((await records.byIds(plan.appId, next.map((v) => v.request_id), [], signal)).map((r) => [r.request_id, r]));
      for (const v of next) {
        const row = latest.get(v.request_id);
        if (row?.seq === v.seq) hits.push({ ...v, row });
      }
    }
    return hits.length >= wanted || versions.length < limit ? hits.slice(0, wanted) : search(true, wanted);
  }

  async function page(plan: ReadPlan, snapshot: Snapshot, after: ClickHouseCursor | undefined, signal: AbortSignal): Promise<ReadResult> {
    // The scan first, then the changes: a record that changes between the
    // two (its latest version's seq passing the snapshot) is then in both
    // sets, where it would be in neither the other way round. It is taken
    // once, where the scan found it (where it stood at the snapshot: its
    // first move since), as it is now (a match when it matches now).
    const { found, spentAt } = await unchangedScan(plan, snapshot, after, signal);
    const since = await changedSince(plan, snapshot, after, signal);
    const changedNow = new Map(since.changed.map((c) => [c.rkey, c]));
    if (signal.aborted) throw ReqlogError.cancelled();
    for (const row of found) {
      const current = changedNow.get(row.rkey);
      if (!current) continue;
      Object.assign(row, current, { matches: true });
      changedNow.delete(row.rkey);
    }
    const changed = [...changedNow.values()];
    const matched: Candidate[] = [];
    let last: Candidate | undefined;
    let next: Candidate | undefined;
    /** Takes a match; true when the page was full already (then it ends before this one). */
    const take = (c: Candidate): boolean => {
      if (matched.length === plan.count) {
        next = matched.at(-1);
        return true;
      }
      matched.push(c);
      return false;
    };
    let c = 0;
    scan: for (const row of found) {
      for (; c < changed.length && newer(changed[c]!, row); c++) {
        last = changed[c];
        if (take(changed[c]!)) break scan;
      }
      last = row;
      if (row.matches && take(row)) break;
      // Budget spent: the page ends after this row, matching or not.
      if (row === spentAt) {
        next = row;
        break;
      }
    }
    if (next === undefined) {
      for (; c < changed.length; c++) {
        last = changed[c];
        if (take(changed[c]!)) break;
      }
    }

    // The unchanged matches, read whole (one may have changed or gone since
    // the scan: it is left out when gone or when it no longer matches, as it
    // would be among the changed records). When no version past the snapshot
    // was stored by the time the changes were looked for, the rows the scan
    // read are still the latest: no second read of their granules.
    const scanned = (m: Candidate) => (since.none ? (m as ScanRow).row : undefined);
    const whole = new Map<string, RequestRow>();
    for (const m of matched) {
      const row = m.changed ? undefined : scanned(m);
      if (row) whole.set(row.request_id, row);
    }
    const unread = matched.filter((m) => !m.changed && !whole.has(m.requestId)).map((m) => m.requestId);
    for (const r of await records.byIds(plan.appId, unread, planFilters(plan), signal)) whole.set(r.request_id, r);
    let kept = matched.filter((m) => m.changed ?? whole.has(m.requestId));
    const rowOf = (m: Candidate) => m.changed ?? whole.get(m.requestId)!;
    // At most a page's bytes: the page ends before the first record that does not fit.
    const bytes = createPageBytes(plan);
    const fitting = kept.findIndex((m) => !bytes.take(pageBytesOf(rowOf(m).record_bytes, rowOf(m).line_bytes, plan)));
    if (fitting >= 0) {
      kept = kept.slice(0, fitting);
      next = kept.at(-1);
    }
    const logs = await records.toLogs(kept.map(rowOf), plan, signal);
    const cursorOf = (m: Candidate) => encodeCursor({ snapshot, sortTime: m.sortTime, rkey: m.rkey });
    return {
      records: logs.map((log, i) => ({ log, cursor: cursorOf(kept[i]!) })),
      next: next && cursorOf(next),
      lastSortTime: last?.sortTime,
    };
  }

  return {
    /** One page of a Read (request ids, or newest first from the plan's cursor). */
    async read(plan: ReadPlan, signal: AbortSignal): Promise<ReadResult> {
      const after = plan.after && decodeCursor(plan.after);
      const snapshot = after?.snapshot ?? (await marks());
      // (The floor as any server last raised it: compaction may have run on another.)
      if (after && after.snapshot.at < (await floorNow(signal))) {
        throw ReqlogError.invalid("offset expired: it is over 24 hours old; start the read again without it");
      }
      if (plan.requestIds) {
        const ids = plan.requestIds.map(bytesToText);
        const rows = await records.byIds(plan.appId, ids, planFilters(plan), signal);
        checkRequestIdBytes(rows.map((row) => pageBytesOf(row.record_bytes, row.line_bytes, plan)), plan);
        const logs = await records.toLogs(rows, plan, signal);
        return {
          records: logs.map((log, i) => ({
            log,
            cursor: encodeCursor({ snapshot, sortTime: BigInt(rows[i]!.sort_time), rkey: BigInt(rows[i]!.rkey) }),
          })),
        };
      }
      return page(plan, snapshot, after, signal);
    },
  };
}

export interface SnapshotPaging {
  /** One page of a Read (request ids, or newest first from the plan's cursor). */
  read(plan: ReadPlan, signal: AbortSignal): Promise<ReadResult>;
}

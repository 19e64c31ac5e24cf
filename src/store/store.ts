import type { InstanceStatus, RequestLog } from "../../gen/reqlog/v1/log_service_pb.js";
import type { AppLine, InstanceKey, PreparedRecord, RequestContext, RequestLines } from "../domain/records.js";
import type { DeletePlan } from "../query/delete-plan.js";
import type { ReadPlan } from "../query/read-plan.js";
import type { UsagePlan } from "../query/usage-plan.js";
import type { StatsPlan } from "../query/stats-plan.js";
import type { QueryPlan } from "../query/logsql/plan-query.js";
import type { Value } from "../query/logsql/query-value.js";
import type { StatsBucket, StatsFigures } from "../domain/stats-figures.js";
import type { ChangePosition, Cursor } from "../domain/positions.js";
import type { StatsFacts } from "../write/stats-facts.js";

/**
 * The storage contract of reqlog, the same for every backend (SQLite, and
 * any networked one). Every method is asynchronous and takes the call's
 * AbortSignal: a cancelled or expired call stops its work (a scan ends, a
 * write not yet begun is not begun) and rejects with CANCELLED. (Work that
 * runs synchronously on the calling thread, such as SQLite's Reads without
 * read workers, cannot see an abort until it ends; its scan budget bounds it.)
 *
 * Positions are opaque: a cursor (where a Read page ends) and a change
 * position (how far a Tail has followed) are bytes that only the backend
 * that made them reads. The layers above pass them back untouched; the
 * offset codec wraps cursors in a versioned, authenticated envelope.
 *
 * Failures are ReqlogErrors: refused input (INVALID_ARGUMENT), a storage
 * fault a retry can fix (UNAVAILABLE), or any other (INTERNAL).
 */
export interface Store {
  /** Upserts request records (by app and request id) with their lines. Durable once resolved. */
  write(records: readonly PreparedRecord[], signal: AbortSignal): Promise<WriteResult>;
  /**
   * Stores request records and app lines of several requests in one
   * transaction (an Ingest batch); lines count only when new.
   */
  ingest(records: readonly PreparedRecord[], lines: readonly RequestLines[], signal: AbortSignal): Promise<WriteResult>;
  /** Stores app lines of one request; returns how many were new. */
  flush(request: RequestContext, lines: RequestLines["lines"], signal: AbortSignal): Promise<number>;
  /** Executes a validated Read plan: newest first, keyset-paged, within the plan's scan budget. */
  read(plan: ReadPlan, signal: AbortSignal): Promise<ReadResult>;
  /**
   * The stored requests of these ids (those that exist), in the order given,
   * once each, with all their lines; a request whose lines came before its
   * record reads as in progress (finished false).
   */
  getRequests(appId: string, requestIds: readonly Uint8Array[], signal: AbortSignal): Promise<RequestLog[]>;
  /**
   * Usage buckets from the hourly rollups, by time then version, and the
   * versions seen; no buckets when the plan asks for versions only.
   */
  usage(plan: UsagePlan, signal: AbortSignal): Promise<UsageResult>;
  /**
   * Request statistics from rollups kept with every write (never a scan of
   * the requests): finished requests per time bucket, route (unless the plan
   * merges routes) and status class (and version), filtered as the plan
   * says, with each route's figures over the range and the top client IPs
   * and user agents when the plan asks for top lists. Refuses
   * (statsTooLarge) an answer of more than `plan.maxRecords` records.
   */
  stats(plan: StatsPlan, signal: AbortSignal): Promise<StatsResult>;
  /**
   * Answers a query from the requests (docs/query.md): the finished requests
   * of the plan's app that match its filter, newest first, through its pipes
   * (the shared pipeline of src/query/logsql/run-pipes.ts, or SQL that gives
   * the same rows). A scan stops at the plan's budget and answers from what
   * it examined (`total` says how many there were). (The service answers
   * from the Stats rollups first, when the plan says they can.)
   */
  query(plan: QueryPlan, signal: AbortSignal): Promise<QueryResult>;
  /** Where the change feed stands now: a Tail started now follows changes after it. */
  changePosition(signal: AbortSignal): Promise<ChangePosition>;
  /**
   * Records of the plan's app changed after `after` that match its filters,
   * oldest change first, at most `limit` of them. `position` is where to go
   * on from (every change up to it has been examined); `caughtUp` is true
   * when no newer change existed as this was read (a full batch may say
   * false even when it held the newest: the next call then returns none).
   */
  changes(plan: ReadPlan, after: ChangePosition, limit: number, signal: AbortSignal): Promise<ChangesResult>;
  /**
   * Calls `listener` after each commit that may have changed records, until
   * `signal` aborts; resolves once the listener is in place.
   */
  subscribe(listener: () => void, signal: AbortSignal): Promise<void>;
  /**
   * Erases the plan's requests with their app lines (or, with dryRun, counts
   * them): they leave Read, Tail, Usage and Stats as each part commits (the
   * rollups stay exact), and their text leaves the backend's files (the
   * backend says how soon). Large deletes go in parts, each its own
   * transaction, so writes go on meanwhile; `onDeleted` hears each part's
   * count (what a cancelled Delete erased before it stopped). Resolves with
   * how many went.
   */
  delete(plan: DeletePlan, signal: AbortSignal, onDeleted?: (count: number) => void): Promise<number>;
  /** The backend's own secret key for authenticating Read offsets (the same across restarts). */
  offsetKey(signal: AbortSignal): Promise<Uint8Array>;
  /**
   * Tells `observer`, after each commit, of the requests it stored finished
   * for the first time (and its new app lines, when the observer takes
   * them), until `signal` aborts: what the request metrics count.
   */
  observeWrites(observer: WriteObserver, signal: AbortSignal): void;
}

/**
 * A request whose record a commit stored as finished for the first time:
 * a new finished record, or an in-progress one (or lines alone) finished.
 * A finished record sent again or rewritten is not one, so whoever counts
 * these counts each finished request once.
 */
export interface FinishedRequest {
  /** The record as written (its required fields filled). */
  log: RequestLog;
  /** What it adds to Stats (its route, status class, latency, bytes). */
  facts: StatsFacts;
  /** The highest level of its app lines stored so far (its own and any that came first); -1: none. */
  maxLevel: number;
}

/** App lines a commit stored for the first time (a line sent again is not new), with the request they belong to. */
export interface NewLines {
  request: Pick<RequestContext, "appId" | "moduleId" | "versionId">;
  lines: readonly AppLine[];
}

/**
 * Told what each write stored, once its transaction has committed (a write
 * rolled back, or a batch whose commit failed, tells nothing), on the
 * thread that committed it: what request metrics and log-based metrics are
 * counted from. It must be quick and must not throw.
 */
export interface WriteObserver {
  finished(requests: readonly FinishedRequest[]): void;
  /** Only when set does the store collect new lines for it. */
  lines?(lines: readonly NewLines[]): void;
}

export type { ChangePosition, Cursor };

/** One page of a Read, before offsets are encoded. */
export interface ReadResult {
  records: { log: RequestLog; cursor: Cursor }[];
  /** Where to continue; set exactly when more matching records may remain. */
  next?: Cursor;
  /** Sort time of the last record examined. */
  lastSortTime?: bigint;
  /** Rows the scan examined, when the backend counts them (for metrics). */
  scanned?: number;
}

/** A query's answer as a backend found it. */
export interface QueryResult {
  /** A value per column of `plan.query.columns`, in the query's order. */
  rows: Value[][];
  /** "index": the search index's candidates; "scan": the requests in the time range; "sql": ClickHouse. */
  source: "index" | "scan" | "sql";
  /** Requests examined. */
  scanned: number;
  /** Set when the budget ended before every request in the time range was examined: how many there are. */
  total?: number;
  /** The answer held more than `plan.maxRows` rows and was cut there. */
  cut: boolean;
}

export interface ChangesResult {
  records: RequestLog[];
  position: ChangePosition;
  caughtUp: boolean;
}

export interface WriteResult {
  /** Request records stored. */
  records: number;
  /** App log lines newly stored (re-sent lines are not counted). */
  lines: number;
}

/** One usage bucket of one version (or of all, when versions are combined). */
export interface UsageBucket {
  startHour: number;
  endHour: number;
  /** undefined when versions are combined. */
  versionId?: string;
  requests: number;
  bytes: number;
  lines: number;
}

export interface UsageResult {
  buckets: UsageBucket[];
  /** The distinct versions with usage in the range, sorted. */
  versions: string[];
}

export type { StatsBucket, StatsFigures };

/** One time bucket of one route (unless the plan merges routes) and status class (and version, when the plan asks). */
export interface StatsRecord extends StatsFigures {
  startHour: number;
  endHour: number;
  /** undefined: the routes beyond the backend's bound on distinct routes per hour, or every route when the plan merges them. */
  route?: string;
  statusClass: number;
  /** Set when the plan asks for a record per version. */
  moduleId?: string;
  versionId?: string;
}

/** One route over the whole range: status classes, versions and time buckets merged. */
export interface StatsRoute extends StatsFigures {
  /** undefined: the routes beyond the backend's bound on distinct routes per hour. */
  route?: string;
}

/**
 * A client IP or user agent and its requests: exact, or (a backend that
 * keeps bounded summaries, src/domain/top-names.ts) an estimate within
 * `maxError` of the exact count, with the errors counted a lower bound.
 */
export interface StatsClient {
  name: string;
  requests: number;
  errors: number;
  /** 0: exact. */
  maxError: number;
}

export interface StatsResult {
  /** By start hour, then route (undefined last), status class, module and version; empty unless `plan.records`. */
  records: StatsRecord[];
  /** The time buckets that count any request, by start hour: what the records of each add up to. */
  buckets: StatsBucket[];
  /** The range: the plan's bounds, or the first and after the last hour with stats; undefined when neither is known. */
  startHour?: number;
  endHour?: number;
  /** Every route of the range with its figures (filtered as the records are), in no order; empty when `plan.topN` is 0. */
  routes: StatsRoute[];
  /** The `plan.topN` client IPs with the most requests in the range (all versions and classes), most first, then by name. */
  clientIps: StatsClient[];
  /** The same for user agents, those the plan's pattern matches left out. */
  userAgents: StatsClient[];
}

export interface StatusFilter {
  appId: string;
  moduleId?: string;
  versionId?: string;
}

/** What SetStatus stores and ListStatus reads back. */
export interface StatusStore {
  /** Stores the latest status text of an instance. */
  setStatus(instance: InstanceKey, status: string, signal: AbortSignal): Promise<void>;
  /** Stored statuses matching the filter, by module, version and instance. */
  listStatus(filter: StatusFilter, signal: AbortSignal): Promise<InstanceStatus[]>;
}

export const scopes = ["read:logs", "write:logs", "admin"] as const;
export type Scope = (typeof scopes)[number];

export interface TokenInfo {
  id: number;
  name: string;
  scopes: Scope[];
  /** undefined = every app. */
  apps?: string[];
  /** Creation time, µs. */
  created: bigint;
  /** Revocation time, µs. */
  revoked?: bigint;
}

/** Access tokens, kept as hashes: the token itself is shown once, at creation. */
export interface TokenStore {
  /**
   * Creates a token; returns it (shown once) and its record. `apps` limits
   * it to those apps (left out: every app; an empty list is refused).
   */
  create(options: { name: string; scopes: Scope[]; apps?: string[] }): Promise<{ token: string; info: TokenInfo }>;
  /** The valid (unrevoked) token a caller presented, or undefined. */
  find(token: string): Promise<TokenInfo | undefined>;
  list(): Promise<TokenInfo[]>;
  /** Revokes a token; false when there is no valid token with that id. */
  revoke(id: number): Promise<boolean>;
  /** Whether any valid token exists (then every call must present one). */
  anyActive(): Promise<boolean>;
}

/** Retention and compaction, run in the background (store/housekeeping.ts). */
export interface Maintenance {
  /**
   * Deletes up to `limit` requests (with their lines) whose sort time is
   * before `cutoff` (µs), keeping the rollups exact; returns how many went.
   */
  expire(cutoff: bigint, limit: number, signal: AbortSignal): Promise<number>;
  /**
   * After deletions: forgets paging history older than `historyCutoff` (µs)
   * and returns freed space. An offset that needs forgotten history is
   * refused as expired; a backend may keep more history than asked (SQLite
   * forgets up to the last point it marked before the cutoff), and an offset
   * that needs none (nothing changed after its page) stays valid.
   */
  compact(historyCutoff: bigint, signal: AbortSignal): Promise<void>;
}

/** A storage backend: the record store and its narrow companions, opened together. */
export interface Backend {
  store: Store;
  statuses: StatusStore;
  tokens: TokenStore;
  maintenance: Maintenance;
  /** Bytes the backend's data takes on disk (for metrics), when it can tell. */
  storageBytes?(): Promise<number>;
  /** Commits what is pending and releases the backend. */
  close(): Promise<void>;
}

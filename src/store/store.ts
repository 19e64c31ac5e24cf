import type { InstanceStatus, RequestLog } from "../../gen/reqlog/v1/log_service_pb.js";
import type { Cursor } from "../query/offset-codec.js";
import type { ReadPlan } from "../query/read-plan.js";
import type { UsagePlan } from "../query/usage-plan.js";
import type { PreparedRecord } from "../write/prepare-request-log.js";
import type { AppLine } from "../write/validate-lines.js";

/** The request a Flush's lines belong to, from the call metadata. */
export interface RequestContext {
  appId: string;
  moduleId: string;
  /** False when the caller did not name a module ("default" is used). */
  moduleSet: boolean;
  versionId: string;
  requestId: Uint8Array;
}

/** The instance a SetStatus comes from, from the call metadata. */
export interface InstanceKey {
  appId: string;
  moduleId: string;
  versionId: string;
  instanceId: string;
}

export interface StatusFilter {
  appId: string;
  moduleId?: string;
  versionId?: string;
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

/** One page of a Read, before offsets are encoded. */
export interface ReadResult {
  records: { log: RequestLog; cursor: Cursor }[];
  /** Where to continue; set exactly when more matching records may remain. */
  next?: Cursor;
  /** Sort time of the last record examined. */
  lastSortTime?: bigint;
}

export interface WriteResult {
  /** Request records stored. */
  records: number;
  /** App log lines newly stored (re-sent lines are not counted). */
  lines: number;
}

/**
 * The storage of reqlog. Each write method commits before its promise
 * resolves: a resolved write survives a crash of the process.
 */
export interface Store {
  /** Upserts request records (by app and request id) with their lines. */
  write(records: readonly PreparedRecord[]): Promise<WriteResult>;
  /**
   * Stores request records and app lines of several requests in one
   * transaction (an Ingest batch); lines count only when new.
   */
  ingest(records: readonly PreparedRecord[], flushes: readonly { request: RequestContext; lines: readonly AppLine[] }[]): Promise<WriteResult>;
  /** Stores app lines of one request; returns how many were new. */
  flush(request: RequestContext, lines: readonly AppLine[]): Promise<number>;
  /** Stores the latest status text of an instance. */
  setStatus(instance: InstanceKey, status: string): Promise<void>;
  /** Stored statuses matching the filter, by module, version and instance. */
  listStatus(filter: StatusFilter): InstanceStatus[];
  /** Executes a validated Read plan: newest first, keyset-paged, within the plan's scan budget. */
  read(plan: ReadPlan): Promise<ReadResult>;
  /**
   * Records of the plan's app changed after `afterSeq` that match its filters,
   * oldest change first, at most `limit` examined; `lastSeq` is where to go on
   * from (everything up to it has been examined).
   */
  changes(plan: ReadPlan, afterSeq: bigint, limit: number): { records: RequestLog[]; lastSeq: bigint };
  /** Usage buckets from the hourly rollups, by time then version; versions only when the plan asks. */
  usage(plan: UsagePlan): { buckets: UsageBucket[]; versions: string[] };
  /** The last change sequence number committed. */
  currentSeq(): bigint;
  /** Calls `listener` after every commit; returns the unsubscribe function. */
  onCommit(listener: () => void): () => void;
  /** The database's own key for authenticating read offsets. */
  offsetKey(): Uint8Array;
  /** The stored records of these request ids (those that exist), in the order given, with their lines. */
  getRequests(appId: string, requestIds: readonly Uint8Array[]): RequestLog[];
  /**
   * Deletes up to `limit` requests (with their lines) whose sort time is
   * before `cutoff` (µs), keeping the rollups exact; returns how many went.
   */
  expire(cutoff: bigint, limit: number): Promise<number>;
  /**
   * Housekeeping after deletions: prunes paging history older than
   * `historyCutoff` (µs) and returns up to `pages` free pages to the file system.
   */
  compact(historyCutoff: bigint, pages: number): Promise<void>;
  /** Commits what is pending and closes the database. */
  close(): Promise<void>;
}

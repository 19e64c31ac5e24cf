import { create, mergeFromBinary } from "@bufbuild/protobuf";
import type Database from "better-sqlite3";
import { type RequestLog, RequestLogSchema } from "../../../../gen/reqlog/v1/log_service_pb.js";
import { formatCombined } from "../../../format/combined-line.js";
import type { Row, Value } from "../../../query/logsql/query-value.js";
import { statsFactsOf, statusClassOf } from "../../../write/stats-facts.js";
import { decodeLines } from "../rows/line-blob.js";
import { ipFromSql } from "../rows/stored-record.js";

/** A stored row as SQLite hands it over (safeIntegers off: numbers; times are exact up to 2^53 µs). */
export type RawRow = Record<string, unknown>;

/** The columns of `requests r` each query field is read from. */
const columnsOf: Record<string, readonly string[]> = {
  _time: ["sort_time"],
  end_time: ["sort_time", "end_time"],
  start_time: ["sort_time", "end_time", "start_time", "latency"],
  latency: ["latency"],
  mcycles: ["mcycles"],
  status: ["status"],
  status_class: ["status"],
  response_size: ["response_size"],
  method: ["method"],
  http_version: ["http_version"],
  referrer: ["referrer"],
  user_agent: ["user_agent"],
  host: ["host"],
  url_map_entry: ["url_map_entry"],
  resource: ["resource_prefix", "resource"],
  route: ["url_map_entry", "resource_prefix", "resource", "status", "latency", "response_size", "ip", "user_agent"],
  ip: ["ip"],
  nickname: ["nickname"],
  module_id: ["version_key"],
  version_id: ["version_key"],
  request_id: ["request_id"],
  replica_index: ["replica_index"],
  line: ["lines"],
  level: ["max_level"],
};
const combinedColumns = [
  "combined", "ip", "nickname", "sort_time", "end_time", "start_time", "latency", "method", "resource_prefix", "resource",
  "http_version", "status", "response_size", "referrer", "user_agent",
];
columnsOf._msg = combinedColumns;
columnsOf.combined = combinedColumns;
/** Fields packed in the row's `extras` (stored-record.ts): read from it. */
const extraFields: Record<string, keyof RequestLog> = {
  api_mcycles: "apiMcycles",
  cost: "cost",
  task_queue_name: "taskQueueName",
  task_name: "taskName",
  was_loading_request: "wasLoadingRequest",
  pending_time: "pendingTime",
  clone_key: "cloneKey",
  platform_release: "platformRelease",
  exit_reason: "exitReason",
  was_throttled_for_time: "wasThrottledForTime",
  was_throttled_for_requests: "wasThrottledForRequests",
  throttled_time: "throttledTime",
  server_name: "serverName",
};
for (const f of Object.keys(extraFields)) columnsOf[f] = ["extras"];

const utf8 = new TextDecoder();

/**
 * Query fields read straight from `requests` rows: the columns a query needs
 * (the lines blob and `extras` only when asked for), strings by key from a
 * cache of `strings` (a key names the same text for good), versions by key,
 * the Stats route computed once per resource. One Row object is reused for
 * every row of a scan; each value is worked out once per row.
 */
export function createQueryRows(db: Database.Database): QueryRows {
  const stmt = {
    string: db.prepare("SELECT text FROM strings WHERE id = ?").pluck(),
    version: db.prepare("SELECT module_id, version_id FROM versions WHERE id = ?"),
  };
  const strings = new Map<number, string>();
  const versions = new Map<number, { module_id: string; version_id: string }>();
  const routes = new Map<string, string>();

  const text = (key: unknown): string => {
    if (key === null || key === undefined) return "";
    const k = key as number;
    let t = strings.get(k);
    if (t === undefined) {
      t = (stmt.string.get(k) as string | undefined) ?? "";
      if (strings.size > 200_000) strings.clear();
      strings.set(k, t);
    }
    return t;
  };
  const version = (key: number) => {
    let v = versions.get(key);
    if (!v) versions.set(key, (v = stmt.version.get(key) as { module_id: string; version_id: string }));
    return v;
  };

  return {
    /** The SELECT list of `requests r` a query reading these fields needs (id and sort time always). */
    selectList(fields: Iterable<string>): string {
      const columns = new Set(["id", "sort_time", "finished", "has_record"]);
      for (const f of fields) for (const c of columnsOf[f] ?? []) columns.add(c);
      return [...columns].map((c) => `r.${c}`).join(", ");
    },

    /** A Row over whatever raw row `bind` was last given. */
    reader(appId: string): { row: Row; bind(raw: RawRow): void } {
      let raw: RawRow = {};
      let memo = new Map<string, Value>();
      let extras: RequestLog | undefined;
      const num = (c: string) => Number(raw[c]);
      const resource = () => text(raw.resource_prefix) + (raw.resource as string);
      const endTime = () => (raw.end_time ?? raw.sort_time) as number;
      const startTime = () => (raw.start_time ?? endTime() - num("latency")) as number;
      const extra = (): RequestLog => (extras ??= raw.extras ? mergeFromBinary(RequestLogSchema, create(RequestLogSchema), raw.extras as Uint8Array) : create(RequestLogSchema));

      const compute = (field: string): Value => {
        switch (field) {
          case "_time":
          case "end_time":
            return endTime();
          case "start_time":
            return startTime();
          case "latency":
          case "mcycles":
          case "status":
          case "response_size":
            return num(field);
          case "status_class":
            return statusClassOf(num("status"));
          case "method":
          case "http_version":
          case "referrer":
          case "user_agent":
          case "host":
          case "url_map_entry":
            return text(raw[field]);
          case "resource":
            return resource();
          case "route": {
            const urlMapEntry = text(raw.url_map_entry);
            const res = resource();
            const id = `${urlMapEntry}\u0000${res}`;
            let route = routes.get(id);
            if (route === undefined) {
              route = statsFactsOf({ urlMapEntry, resource: res, status: 0, latency: 0n, responseSize: 0n, ip: "" }).route;
              if (routes.size > 50_000) routes.clear();
              routes.set(id, route);
            }
            return route;
          }
          case "ip":
            return ipFromSql(raw.ip);
          case "nickname":
            return (raw.nickname as string | null) ?? "";
          case "module_id":
            return version(raw.version_key as number).module_id;
          case "version_id":
            return version(raw.version_key as number).version_id;
          case "app_id":
            return appId;
          case "request_id":
            return utf8.decode(raw.request_id as Uint8Array);
          case "replica_index":
            return (raw.replica_index as number | null) ?? -1;
          case "finished":
            return "true";
          case "line":
            return decodeLines(raw.lines as Uint8Array | null)
              .map((l) => l.message)
              .join("\n");
          case "level":
            return (raw.max_level as number | null) ?? null;
          case "_msg":
          case "combined": {
            if (typeof raw.combined === "string") return raw.combined;
            return formatCombined({
              ip: ipFromSql(raw.ip),
              nickname: (raw.nickname as string | null) ?? "",
              startTime: BigInt(startTime()),
              endTime: BigInt(endTime()),
              method: text(raw.method),
              resource: resource(),
              httpVersion: text(raw.http_version),
              status: num("status"),
              responseSize: BigInt(num("response_size")),
              referrer: text(raw.referrer),
              userAgent: text(raw.user_agent),
            });
          }
          default: {
            const name = extraFields[field];
            if (!name) return null;
            const v = extra()[name];
            if (typeof v === "boolean") return v ? "true" : "false";
            if (typeof v === "bigint") return Number(v);
            if (v instanceof Uint8Array) return utf8.decode(v);
            return v as string | number;
          }
        }
      };

      return {
        row: {
          get(field) {
            let v = memo.get(field);
            if (v === undefined && !memo.has(field)) {
              v = compute(field);
              memo.set(field, v);
            }
            return v ?? null;
          },
        },
        bind(next) {
          raw = next;
          memo = new Map();
          extras = undefined;
        },
      };
    },
  };
}

export interface QueryRows {
  /** The SELECT list of `requests r` a query reading these fields needs (id and sort time always). */
  selectList(fields: Iterable<string>): string;
  /** A Row over whatever raw row `bind` was last given. */
  reader(appId: string): { row: Row; bind(raw: RawRow): void; };
}

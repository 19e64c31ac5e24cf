import type { RequestLog } from "../../../gen/reqlog/v1/log_service_pb.js";
import { statsFactsOf, statusClassOf } from "../../write/stats-facts.js";
import type { Row, Value } from "./query-value.js";

const utf8 = new TextDecoder();
const bool = (b: boolean) => (b ? "true" : "false");

/** Each query field of a RequestLog (docs/query.md): how a backend that reads whole records sees them. */
const fieldOf: Record<string, (log: RequestLog) => Value> = {
  _time: (l) => Number(l.endTime),
  _msg: (l) => l.combined,
  combined: (l) => l.combined,
  route: (l) => statsFactsOf(l).route,
  status_class: (l) => statusClassOf(l.status),
  line: (l) => l.line.map((x) => x.logMessage).join("\n"),
  level: (l) => (l.line.length === 0 ? null : l.line.reduce((m, x) => Math.max(m, x.level), 0)),
  app_id: (l) => l.appId,
  module_id: (l) => l.moduleId,
  version_id: (l) => l.versionId,
  request_id: (l) => utf8.decode(l.requestId),
  ip: (l) => l.ip,
  nickname: (l) => l.nickname,
  start_time: (l) => Number(l.startTime),
  end_time: (l) => Number(l.endTime),
  latency: (l) => Number(l.latency),
  mcycles: (l) => Number(l.mcycles),
  method: (l) => l.method,
  resource: (l) => l.resource,
  http_version: (l) => l.httpVersion,
  status: (l) => l.status,
  response_size: (l) => Number(l.responseSize),
  referrer: (l) => l.referrer,
  user_agent: (l) => l.userAgent,
  url_map_entry: (l) => l.urlMapEntry,
  api_mcycles: (l) => Number(l.apiMcycles),
  host: (l) => l.host,
  cost: (l) => l.cost,
  task_queue_name: (l) => l.taskQueueName,
  task_name: (l) => l.taskName,
  was_loading_request: (l) => bool(l.wasLoadingRequest),
  pending_time: (l) => Number(l.pendingTime),
  replica_index: (l) => l.replicaIndex,
  finished: (l) => bool(l.finished),
  clone_key: (l) => utf8.decode(l.cloneKey),
  platform_release: (l) => utf8.decode(l.platformRelease),
  exit_reason: (l) => l.exitReason,
  was_throttled_for_time: (l) => bool(l.wasThrottledForTime),
  was_throttled_for_requests: (l) => bool(l.wasThrottledForRequests),
  throttled_time: (l) => Number(l.throttledTime),
  server_name: (l) => utf8.decode(l.serverName),
};

/** A request record (with its app lines, when a query reads `line` or `level`) as a row of query fields. */
export function logRow(log: RequestLog): Row {
  return { get: (field) => fieldOf[field]?.(log) ?? null };
}

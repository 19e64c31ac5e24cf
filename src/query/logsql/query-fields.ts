/**
 * The fields a query can name: every RequestLog field by its proto name,
 * and the ones a query language over requests needs besides (LogsQL's
 * `_time` and `_msg`, the Stats route and status class, the app lines).
 * Each has a type, which decides how its values compare, sort and print.
 */

/**
 * - text: compared as text (byte order of UTF-8, as SQL does);
 * - int: a whole number (statuses, sizes, µs since the epoch for start_time and end_time);
 * - duration: microseconds; filters take duration units (`latency:>1.5s`);
 * - time: `_time`, microseconds, filtered with LogsQL's time forms and printed as RFC 3339;
 * - float: a decimal number (cost);
 * - bool: the text `true` or `false`;
 * - bytes: the bytes read as UTF-8 text.
 */
export type FieldType = "text" | "int" | "duration" | "time" | "float" | "bool" | "bytes";

export interface QueryField {
  name: string;
  type: FieldType;
  about: string;
}

/** Whether values of the type are numbers (ranges, sums and averages apply to them). */
export const isNumeric = (type: FieldType) => type === "int" || type === "duration" || type === "time" || type === "float";

const field = (name: string, type: FieldType, about: string): QueryField => ({ name, type, about });

export const queryFields: readonly QueryField[] = [
  field("_time", "time", "when the request ended (end_time)"),
  field("_msg", "text", "the combined line, as Read returns it"),
  field("route", "text", "url_map_entry when set, else the route Stats counts the request under"),
  field("status_class", "int", "1 to 5 for 1xx to 5xx, 0 for a status outside 100..599 (as Stats counts)"),
  field("line", "text", "the request's app-line messages, in time order, one per line (joined by a newline)"),
  field("level", "int", "the highest app-line level (0 DEBUG … 4 CRITICAL); empty without app lines"),
  field("app_id", "text", "the app"),
  field("module_id", "text", "the module (default \"default\")"),
  field("version_id", "text", "the version"),
  field("request_id", "bytes", "the request id"),
  field("ip", "text", "the client's address"),
  field("nickname", "text", "the user's nickname"),
  field("start_time", "int", "when the request started, µs since the epoch"),
  field("end_time", "int", "when the request ended, µs since the epoch"),
  field("latency", "duration", "end_time − start_time, µs"),
  field("mcycles", "int", "CPU megacycles"),
  field("method", "text", "the HTTP method"),
  field("resource", "text", "the requested path with its query string"),
  field("http_version", "text", "the HTTP version"),
  field("status", "int", "the HTTP status"),
  field("response_size", "int", "bytes sent"),
  field("referrer", "text", "the Referer header"),
  field("user_agent", "text", "the User-Agent header"),
  field("url_map_entry", "text", "the handler's route pattern, when the app set one"),
  field("combined", "text", "the combined line (as _msg)"),
  field("api_mcycles", "int", "API megacycles"),
  field("host", "text", "the Host header"),
  field("cost", "float", "the request's cost"),
  field("task_queue_name", "text", "the task queue"),
  field("task_name", "text", "the task"),
  field("was_loading_request", "bool", "whether the request started an instance"),
  field("pending_time", "duration", "time spent in the pending queue, µs"),
  field("replica_index", "int", "the replica (-1 when unset)"),
  field("finished", "bool", "whether the request has finished (queries read finished requests)"),
  field("clone_key", "bytes", "the instance's key"),
  field("platform_release", "bytes", "the platform release"),
  field("exit_reason", "int", "why the instance exited"),
  field("was_throttled_for_time", "bool", "throttled for time"),
  field("was_throttled_for_requests", "bool", "throttled for requests"),
  field("throttled_time", "int", "throttled time"),
  field("server_name", "bytes", "the server's name"),
];

const byName = new Map(queryFields.map((f) => [f.name, f]));

export function queryField(name: string): QueryField | undefined {
  return byName.get(name);
}

/** The columns a query prints for each request when no `fields` or `stats` pipe chose them. */
export const defaultColumns: readonly string[] = [
  "_time", "status", "method", "resource", "latency", "response_size", "ip", "request_id",
];

/** The known name closest to a misspelt one (at most two edits away), for "did you mean". */
export function closestName(name: string, names: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of names) {
    const d = editDistance(name, candidate);
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best;
}

/** Optimal string alignment distance (a swap of two neighbours counts one edit). */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

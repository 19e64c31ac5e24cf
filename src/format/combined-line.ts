import type { RequestLog } from "../../gen/reqlog/v1/log_service_pb.js";

const months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

function pad2(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

// The last second formatted: scans derive many lines of the same second in a row.
let lastSecond: number | undefined;
let lastStamp = "";

/** `dd/Mon/yyyy:HH:MM:SS +0000` of a time in microseconds since the epoch, in UTC. */
export function formatApacheTime(usec: bigint): string {
  const ms = Number(usec / 1000n);
  const second = Math.floor(ms / 1000);
  if (second === lastSecond) return lastStamp;
  const d = new Date(ms);
  lastStamp =
    `${pad2(d.getUTCDate())}/${months[d.getUTCMonth()]}/${d.getUTCFullYear()}:` +
    `${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}:${pad2(d.getUTCSeconds())} +0000`;
  lastSecond = second;
  return lastStamp;
}

/**
 * Escapes a field as Apache httpd does in its logs (ap_escape_logitem):
 * `"` and `\` get a backslash, control characters become \xHH, so a field
 * cannot break the line's quoting and the line stays parseable.
 */
export function escapeLogItem(s: string): string {
  return s.replace(/["\\\x00-\x1f\x7f]/g, (c) =>
    c === '"' || c === "\\" ? `\\${c}` : `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`,
  );
}

function orDash(s: string | undefined): string {
  return s ? escapeLogItem(s) : "-";
}

/** The fields the combined line is made of. */
export type CombinedFields = Pick<
  RequestLog,
  | "ip"
  | "nickname"
  | "startTime"
  | "endTime"
  | "method"
  | "resource"
  | "httpVersion"
  | "status"
  | "responseSize"
  | "referrer"
  | "userAgent"
>;

/**
 * The Apache combined log line of a request record:
 * `ip - nickname|- [time] "METHOD resource HTTP_VERSION" status size "referrer|-" "user_agent|-"`,
 * time = end time (start time while the request has not ended) in UTC.
 * An empty ip or nickname prints as "-"; an empty HTTP version is left out
 * of the request line.
 */
export function formatCombined(log: CombinedFields): string {
  const time = log.endTime > 0n ? log.endTime : log.startTime;
  const request = log.httpVersion
    ? `${log.method} ${log.resource} ${log.httpVersion}`
    : `${log.method} ${log.resource}`;
  // Joined, not concatenated: concatenation makes a tree of ~20 pieces (a V8 cons string) that lives until the
  // line is first read whole; a Write's records hold theirs while queued, and the young generation's collections
  // copied ~0.5 KB a record of it (docs/benchmarks.md). join makes the one flat string at once.
  return [
    orDash(log.ip), " - ", orDash(log.nickname), " [", formatApacheTime(time), '] "', escapeLogItem(request), '" ',
    String(log.status), " ", String(log.responseSize), ' "', orDash(log.referrer), '" "', orDash(log.userAgent), '"',
  ].join("");
}

// The characters formatCombined escapes.
const needsEscape = /["\\\x00-\x1f\x7f]/;

const year10000 = 253_402_300_800_000_000n; // 10000-01-01T00:00:00Z in µs

/**
 * Whether each field appears in the combined line as it is (none needs
 * escaping) and its time has a four-digit year, so that every piece of the
 * line is a piece of one field, the time, or the fixed parts.
 */
export function plainFields(log: CombinedFields): boolean {
  const time = log.endTime > 0n ? log.endTime : log.startTime;
  if (time < 0n || time >= year10000) return false;
  return ![log.ip, log.nickname, log.method, log.resource, log.httpVersion, log.referrer, log.userAgent].some(
    (field) => field !== undefined && needsEscape.test(field),
  );
}

/** Extra fields of a request record that App Engine appended to `combined` with include_all. */
export type ExtraFields = Pick<
  RequestLog,
  "host" | "latency" | "mcycles" | "cost" | "wasLoadingRequest" | "cloneKey" | "taskQueueName" | "taskName"
>;

/**
 * The combined line with the host (include_host) and, for include_all, the
 * extra fields App Engine appended: ` "host" ms= cpu_ms= cpm_usd= loading_request= instance= queue_name= task_name=`.
 * ms is the latency in milliseconds, cpu_ms the megacycles at App Engine's
 * 1.2 GHz reference (mcycles / 1.2), instance the clone key in hex; the
 * optional ones appear only when set on the record (`isSet`).
 */
export function withExtras(
  combined: string,
  log: ExtraFields,
  extras: "none" | "host" | "all",
  isSet: (field: keyof ExtraFields) => boolean,
): string {
  if (extras === "none") return combined;
  let line = `${combined} "${isSet("host") && log.host ? escapeLogItem(log.host) : "-"}"`;
  if (extras === "host") return line;
  line += ` ms=${log.latency / 1000n} cpu_ms=${Math.round(Number(log.mcycles) / 1.2)}`;
  if (isSet("cost")) line += ` cpm_usd=${log.cost.toFixed(6)}`;
  if (isSet("wasLoadingRequest")) line += ` loading_request=${log.wasLoadingRequest ? 1 : 0}`;
  if (isSet("cloneKey")) line += ` instance=${Buffer.from(log.cloneKey).toString("hex")}`;
  if (isSet("taskQueueName")) line += ` queue_name=${escapeLogItem(log.taskQueueName)}`;
  if (isSet("taskName")) line += ` task_name=${escapeLogItem(log.taskName)}`;
  return line;
}

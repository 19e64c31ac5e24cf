import type { RequestLog } from "../../gen/reqlog/v1/log_service_pb.js";

const months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

function pad2(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

/** `dd/Mon/yyyy:HH:MM:SS +0000` of a time in microseconds since the epoch, in UTC. */
export function formatApacheTime(usec: bigint): string {
  const d = new Date(Number(usec / 1000n));
  return (
    `${pad2(d.getUTCDate())}/${months[d.getUTCMonth()]}/${d.getUTCFullYear()}:` +
    `${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}:${pad2(d.getUTCSeconds())} +0000`
  );
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
  return (
    `${orDash(log.ip)} - ${orDash(log.nickname)} [${formatApacheTime(time)}] ` +
    `"${escapeLogItem(request)}" ${log.status} ${log.responseSize} "${orDash(log.referrer)}" "${orDash(log.userAgent)}"`
  );
}

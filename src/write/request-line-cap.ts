import { exceeded, type Limits } from "../limits.js";

/** What one request may hold of app lines: a store refuses a write that would take a request past either. */
export type RequestLineCap = Pick<Limits, "maxRequestLines" | "maxRequestLineBytes">;

/** A request id as messages show it: its text when it is printable ASCII, else hex. */
function shownId(requestId: Uint8Array | string): string {
  const bytes = typeof requestId === "string" ? Buffer.from(requestId, "latin1") : Buffer.from(requestId);
  const text = bytes.toString("latin1");
  return /^[\x20-\x7e]*$/.test(text) ? JSON.stringify(text) : `0x${bytes.toString("hex")}`;
}

/**
 * Refuses a write that would leave a request with more app lines, or more
 * bytes of them, than the cap: a request's lines are kept together and read
 * (and on SQLite rewritten by each flush) whole, so without a bound one
 * request fed by many flushes grew to 125 MB and every Read of it with app
 * logs answered that much. `lines` and `bytes` are the request's totals
 * once the write's new lines (not those stored already) are added.
 */
export function checkRequestLines(
  lines: number | bigint,
  bytes: number | bigint,
  cap: RequestLineCap,
  requestId: Uint8Array | string,
): void {
  const hint = "the lines stored before are kept; send further lines as another request";
  if (lines > cap.maxRequestLines) {
    throw exceeded(cap, "maxRequestLines", String(lines), `number of app lines of request ${shownId(requestId)}`, hint);
  }
  if (bytes > cap.maxRequestLineBytes) {
    throw exceeded(cap, "maxRequestLineBytes", String(bytes), `bytes of app lines of request ${shownId(requestId)}`, hint);
  }
}

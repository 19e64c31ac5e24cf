import { usecPerHour } from "../rows/hours.js";

/**
 * How many records each hour of sort time holds (the Usage hours), newest
 * first: what sizes a scan's windows by rows rather than by time. A window
 * sized by the average rows a µs of the range holds goes wrong wherever the
 * records are not spread evenly: in-progress requests sort at their last
 * write, days above the finished ones, so a first window of "ten pages of
 * rows" held only them and the next, grown from their density, took in the
 * whole app. Within an hour the records are taken to be spread evenly; a
 * gap between hours holds none, so a window reaches across it.
 */
export interface StoredHours {
  /** Hours since the epoch, newest first, each holding at least one record (or lines). */
  hours: readonly number[];
  /** Records of each hour. */
  requests: readonly number[];
}

const hourUs = Number(usecPerHour);

/**
 * The width (µs) below `from` that holds about `rows` records by the hours
 * (at least 1 µs), or undefined when every hour below `from` together holds
 * fewer: then the rest of the range is one window.
 */
export function widthFor(stored: StoredHours, from: bigint, rows: number): bigint | undefined {
  let left = rows;
  for (let i = 0; i < stored.hours.length; i++) {
    const start = BigInt(stored.hours[i]!) * usecPerHour;
    if (start >= from) continue;
    const end = start + usecPerHour < from ? start + usecPerHour : from;
    const spanUs = Number(end - start);
    const held = (stored.requests[i]! * spanUs) / hourUs;
    if (held >= left && held > 0) {
      const lower = end - BigInt(Math.floor((left / held) * spanUs));
      const width = from - lower;
      return width > 0n ? width : 1n;
    }
    left -= held;
  }
  return undefined;
}

/** About how many records the hours hold in the `width` µs below `from` (widthFor's inverse). */
export function rowsWithin(stored: StoredHours, from: bigint, width: bigint): number {
  const lower = from - width;
  let rows = 0;
  for (let i = 0; i < stored.hours.length; i++) {
    const start = BigInt(stored.hours[i]!) * usecPerHour;
    if (start >= from) continue;
    const end = start + usecPerHour < from ? start + usecPerHour : from;
    if (end <= lower) break;
    const inside = Number(end - (start > lower ? start : lower));
    rows += (stored.requests[i]! * inside) / hourUs;
  }
  return rows;
}

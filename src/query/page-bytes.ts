import { exceeded } from "../limits.js";
import type { ReadPlan } from "./read-plan.js";

/**
 * Bytes a stored request adds to a page: its record's wire size, and its
 * app lines' when the plan attaches them (all of them: an upper bound when
 * it keeps only the last few).
 */
export function pageBytesOf(recordBytes: number | bigint | string, lineBytes: number | bigint | string, plan: Pick<ReadPlan, "appLogs">): number {
  return Number(recordBytes) + (plan.appLogs ? Number(lineBytes) : 0);
}

export interface PageBytes {
  /** Whether a record of `size` bytes still fits (it is then counted); the first always does. */
  take(size: number): boolean;
}

/**
 * The byte budget of one page (or Tail message): records are taken in page
 * order until the next would take the page past `plan.budget.bytes`; the page
 * then ends there, with an offset that continues at that record. A record is
 * returned alone whatever its size, so paging always moves on.
 */
export function createPageBytes(plan: Pick<ReadPlan, "budget">): PageBytes {
  let used = 0;
  let taken = 0;
  return {
    take(size) {
      if (taken > 0 && used + size > plan.budget.bytes) return false;
      used += size;
      taken++;
      return true;
    },
  };
}

/**
 * Refuses a request-id Read (which has no offset to continue) whose records
 * together pass the page's byte budget; a single record is answered
 * whatever its size.
 */
export function checkRequestIdBytes(sizes: readonly number[], plan: Pick<ReadPlan, "budget">): void {
  const total = sizes.reduce((sum, size) => sum + size, 0);
  if (sizes.length > 1 && total > plan.budget.bytes) {
    throw exceeded({ maxReadBytes: plan.budget.bytes }, "maxReadBytes", total, "bytes of the records of these request ids", "ask for fewer ids at a time");
  }
}

import type Database from "better-sqlite3";
import type RE2 from "re2";
import { compileRegex, type ReadPlan } from "../../query/read-plan.js";

/** How often (in rows) a scan looks at the clock and at its cancel flag. */
const clockEvery = 64;

/**
 * The scan budget and RE2 patterns of the statement running now on one
 * connection (one at a time: better-sqlite3 is synchronous), read by SQL
 * functions registered on it: reqlog_spent() counts each row a scan yields
 * and turns true once the plan's rows or time are used up, or the call is
 * cancelled (a flag another thread may set); reqlog_combined_match and
 * reqlog_host_match test a row's combined line and host as bytes.
 */
export function createScanBudget(db: Database.Database) {
  const state = {
    examined: 0,
    maxRows: Number.POSITIVE_INFINITY,
    deadline: Number.POSITIVE_INFINITY,
    spent: false,
    /** Set to 1 (at index 0) when the call is cancelled. */
    cancel: undefined as Int32Array | undefined,
    combined: undefined as RE2 | undefined,
    host: undefined as RE2 | undefined,
  };
  const cancelled = () => state.cancel !== undefined && Atomics.load(state.cancel, 0) === 1;

  db.function("reqlog_spent", () => {
    state.examined++;
    if (
      !state.spent &&
      // The row past the budget is the one let through (and checked on its own).
      (state.examined > state.maxRows ||
        (state.examined % clockEvery === 0 && (performance.now() > state.deadline || cancelled())))
    ) {
      state.spent = true;
    }
    return state.spent ? 1 : 0;
  });
  db.function("reqlog_combined_match", (line: unknown) =>
    Buffer.isBuffer(line) && state.combined?.test(line) ? 1 : 0,
  );
  db.function("reqlog_host_match", (host: unknown) => (Buffer.isBuffer(host) && state.host?.test(host) ? 1 : 0));

  return {
    /** Runs `work` with the plan's budget and patterns in force. */
    run<T>(plan: ReadPlan, cancel: Int32Array | undefined, work: () => T): T {
      Object.assign(state, {
        examined: 0,
        maxRows: plan.budget.rows,
        deadline: performance.now() + plan.budget.ms,
        spent: false,
        cancel,
        combined: compileRegex(plan.combinedRegex),
        host: compileRegex(plan.hostRegex),
      });
      try {
        return work();
      } finally {
        Object.assign(state, {
          combined: undefined,
          host: undefined,
          cancel: undefined,
          maxRows: Number.POSITIVE_INFINITY,
          deadline: Number.POSITIVE_INFINITY,
        });
      }
    },
    /** Rows the running (or last) scan examined. */
    get examined(): number {
      return state.examined;
    },
    /** Whether the running scan has used up its budget (or was cancelled). */
    get spent(): boolean {
      return state.spent;
    },
    /** Whether the running scan's call was cancelled. */
    get cancelled(): boolean {
      return cancelled();
    },
  };
}

export type ScanBudget = ReturnType<typeof createScanBudget>;

import type Database from "better-sqlite3";
import type RE2 from "re2";
import { compileRegex, type ReadPlan } from "../../../query/read-plan.js";
import { combinedLineOf } from "./combined-match.js";

/** How often (in rows) a scan looks at the clock and at its cancel flag. */
const clockEvery = 64;

/**
 * The scan budget and RE2 patterns of the statement running now on one
 * connection (one at a time: better-sqlite3 is synchronous), read by SQL
 * functions registered on it: reqlog_spent() counts each row a scan yields
 * and turns true once the plan's rows or time are used up, or the call is
 * cancelled (a flag another thread may set); reqlog_combined_match tests
 * a row's combined line (stored, or built from its fields) and
 * reqlog_host_match its host, each as bytes (RE2 reads them without a
 * conversion); a host is tested once per Read.
 */
export function createScanBudget(db: Database.Database): ScanBudget {
  const state = {
    examined: 0,
    maxRows: Number.POSITIVE_INFINITY,
    deadline: Number.POSITIVE_INFINITY,
    spent: false,
    /** Set to 1 (at index 0) when the call is cancelled. */
    cancel: undefined as Int32Array | undefined,
    combined: undefined as RE2 | undefined,
    host: undefined as RE2 | undefined,
    hosts: new Map<bigint | null, number>(),
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
  db.function("reqlog_combined_match", { varargs: true, safeIntegers: true }, (...args: unknown[]) =>
    state.combined?.test(Buffer.from(combinedLineOf(args))) ? 1 : 0,
  );
  db.function("reqlog_host_match", { safeIntegers: true }, (key: unknown, host: unknown) => {
    let matched = state.hosts.get(key as bigint | null);
    if (matched === undefined) {
      matched = state.host?.test(Buffer.from(typeof host === "string" ? host : "")) ? 1 : 0;
      state.hosts.set(key as bigint | null, matched);
    }
    return matched;
  });

  return {
    /** Runs `work` with the plan's budget and patterns in force. */
    run<T>(plan: { budget: Pick<ReadPlan["budget"], "rows" | "ms"> } & Partial<Pick<ReadPlan, "combinedRegex" | "hostRegex">>, cancel: Int32Array | undefined, work: () => T): T {
      Object.assign(state, {
        examined: 0,
        maxRows: plan.budget.rows,
        deadline: performance.now() + plan.budget.ms,
        spent: false,
        cancel,
        combined: compileRegex(plan.combinedRegex),
        host: compileRegex(plan.hostRegex),
      });
      state.hosts.clear();
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
    /** Counts rows examined outside a scan (a Read's search index candidates). */
    charge(rows: number): void {
      state.examined += rows;
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

export interface ScanBudget {
  /** Runs `work` with the plan's budget and patterns in force. */
  run<T>(plan: { budget: Pick<ReadPlan["budget"], "rows" | "ms"> } & Partial<Pick<ReadPlan, "combinedRegex" | "hostRegex">>, cancel: Int32Array | undefined, work: () => T): T;
  /** Counts rows examined outside a scan (a Read's search index candidates). */
  charge(rows: number): void;
  /** Rows the running (or last) scan examined. */
  readonly examined: number;
  /** Whether the running scan has used up its budget (or was cancelled). */
  readonly spent: boolean;
  /** Whether the running scan's call was cancelled. */
  readonly cancelled: boolean;
}

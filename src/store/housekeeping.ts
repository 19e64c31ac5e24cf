import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import type { Logger } from "pino";
import type { Clock } from "../clock.js";
import type { Maintenance } from "./store.js";

/** How long a Read offset stays valid: paging history older than this is pruned. */
export const offsetLifetimeMs = 24 * 3_600_000;

export interface HousekeepingOptions {
  /** Delete requests whose sort time is older than this (0: keep everything). */
  retentionMs: number;
  /** Time between runs. */
  intervalMs: number;
  /** Requests deleted per transaction: small, so writers wait at most one batch. */
  batch?: number;
  now: Clock;
  logger: Logger;
}

export interface Housekeeping {
  /** One run now: expire in batches, then compact. Returns how many requests were deleted. */
  runOnce(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * Retention and compaction in the background: old requests go in small
 * transactions that share the group commit with writes (yielding to the
 * event loop between batches), then paging history older than the offset
 * lifetime is pruned and free pages are handed back to the file system.
 */
export function startHousekeeping(maintenance: Maintenance, options: HousekeepingOptions): Housekeeping {
  const batch = options.batch ?? 500;
  let running: Promise<number> | undefined;

  // Stopping aborts the batch under way at its next chance (a write not yet begun is not begun).
  const stopping = new AbortController();

  async function run(): Promise<number> {
    const signal = stopping.signal;
    let deleted = 0;
    if (options.retentionMs > 0) {
      const cutoff = options.now() - BigInt(Math.round(options.retentionMs * 1000));
      for (;;) {
        const n = await maintenance.expire(cutoff, batch, signal);
        deleted += n;
        if (n < batch || signal.aborted) break;
        await yieldToEventLoop();
      }
    }
    await maintenance.compact(options.now() - BigInt(offsetLifetimeMs * 1000), signal);
    if (deleted > 0) options.logger.info({ deleted }, "retention deleted old requests");
    return deleted;
  }

  function runOnce(): Promise<number> {
    running ??= run().finally(() => {
      running = undefined;
    });
    return running;
  }

  const timer = setInterval(() => {
    runOnce().catch((err: unknown) => options.logger.error({ err }, "housekeeping failed"));
  }, options.intervalMs);
  timer.unref();

  return {
    runOnce,
    async stop() {
      stopping.abort();
      clearInterval(timer);
      await running?.catch(() => undefined);
    },
  };
}

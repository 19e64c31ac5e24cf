import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RequestLog } from "../gen/reqlog/v1/log_service_pb.js";
import { defaultLimits } from "../src/limits.js";
import { openSqliteBackend } from "../src/store/sqlite/sqlite-backend.js";
import { prepareRequestLog } from "../src/write/prepare-request-log.js";
import { forgeTraffic } from "./forge-traffic.js";

export const benchStart = 1_795_000_000_000_000n;

/**
 * A bench stopped by SIGTERM or ^C exits as if it had ended, so that what it
 * started goes with it: the "exit" handlers kill its servers (reqlog,
 * ClickHouse) and remove its folders, and a signal's default action runs
 * none of them. A bench that waits for the signal itself (a kept ClickHouse)
 * is left to do so.
 */
for (const [signal, code] of [["SIGTERM", 143], ["SIGINT", 130]] as const) {
  process.once(signal, () => {
    if (process.listenerCount(signal) === 0) process.exit(code);
  });
}

/** The middle value (the upper middle of an even count). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** A fresh database file in a temporary folder, removed when the bench's process exits. */
export function benchDbPath(name: string): string {
  const folder = mkdtempSync(join(tmpdir(), `reqlog-bench-${name}-`));
  process.once("exit", () => rmSync(folder, { recursive: true, force: true }));
  return join(folder, "bench.db");
}

/** The first `n` records of the seeded forge traffic. */
export function trafficRecords(n: number, seed = 42, gapUsec = 100_000): Generator<RequestLog> {
  return forgeTraffic({ seed, startUsec: benchStart, gapUsec, total: n });
}

/**
 * Loads `n` requests into a new SQLite backend through its store (validation
 * and group commit included, `synchronous=NORMAL`); returns the backend, open
 * (no tokens in it: a server on it is open, on loopback), and the rate.
 * `shape` changes each record before it is written (the same for every run).
 */
export async function loadBackend(
  path: string,
  n: number,
  onProgress?: (done: number) => void,
  gapUsec = 100_000,
  shape: (log: RequestLog) => RequestLog = (log) => log,
) {
  const backend = openSqliteBackend({ path, sync: "normal" });
  const signal = new AbortController().signal;
  const started = performance.now();
  let batch = [];
  let done = 0;
  for (const log of trafficRecords(n, 42, gapUsec)) {
    batch.push(prepareRequestLog(shape(log), defaultLimits, "log"));
    if (batch.length === 1000) {
      await backend.store.write(batch, signal);
      done += batch.length;
      batch = [];
      if (done % 100_000 === 0) onProgress?.(done);
    }
  }
  if (batch.length > 0) await backend.store.write(batch, signal);
  const seconds = (performance.now() - started) / 1000;
  return { backend, requestsPerSecond: n / seconds, seconds };
}

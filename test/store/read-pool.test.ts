import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setImmediate as nextTurn } from "node:timers/promises";
import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LogReadRequestSchema, StatsRequestSchema, StatsSplit } from "../../gen/reqlog/v1/log_service_pb.js";
import { defaultLimits } from "../../src/limits.js";
import { createOffsetCodec } from "../../src/query/offset-codec.js";
import { planRead } from "../../src/query/read-plan.js";
import { planStats } from "../../src/query/stats-plan.js";
import { Code, ReqlogError } from "../../src/reqlog-error.js";
import { openSqliteBackend, type SqliteBackend } from "../../src/store/sqlite/sqlite-backend.js";
import { createStatsReader, readsFewRows } from "../../src/store/sqlite/stats/sqlite-stats.js";
import type { ReadResult } from "../../src/store/store.js";
import { prepareRequestLog } from "../../src/write/prepare-request-log.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";

let dir: string;
let backend: SqliteBackend;
const signal = new AbortController().signal;
const rows = 60_000;
/** A scan budget no Read here reaches: a Read that matches nothing scans every row (tens of ms). */
const limits = { ...defaultLimits, readScanMs: 60_000, readScanRows: 10_000_000 };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "reqlog-pool-"));
  backend = openSqliteBackend({ path: join(dir, "reqlog.db"), readWorkers: 2, now: () => t0 });
  for (let batch = 0; batch < rows / 5000; batch++) {
    const logs = Array.from({ length: 5000 }, (_, i) => {
      const n = batch * 5000 + i;
      return minimalLog({ requestId: rid(`r${n}`), endTime: t0 + BigInt(n), userAgent: "u".repeat(100) });
    });
    await backend.store.write(logs.map((log) => prepareRequestLog(log, limits, "log")), signal);
  }
});
afterAll(async () => {
  await backend.close();
  rmSync(dir, { recursive: true, force: true });
});

async function plan(init: Parameters<typeof create<typeof LogReadRequestSchema>>[1] = {}) {
  const offsets = createOffsetCodec(await backend.store.offsetKey(signal));
  return planRead(create(LogReadRequestSchema, { appId: "forge", ...init }), limits, offsets);
}

/** The newest five request ids: what a healthy pool answers. */
async function newestFive(): Promise<string[]> {
  const result = await backend.store.read(await plan({ count: 5n }), signal);
  return result.records.map((r) => new TextDecoder().decode(r.log.requestId));
}
/** Matches no row and has no three-character literal: the search index cannot narrow it, so a Read scans every row. */
const scanningRegex = "q[0-9]z";
const expectedFive = [59_999, 59_998, 59_997, 59_996, 59_995].map((n) => `r${n}`);

function expectUnavailable(outcomes: PromiseSettledResult<ReadResult>[]): void {
  for (const outcome of outcomes) {
    expect(outcome.status).toBe("rejected");
    const err = (outcome as PromiseRejectedResult).reason as ReqlogError;
    expect(err).toBeInstanceOf(ReqlogError);
    expect(err.code).toBe(Code.UNAVAILABLE);
    expect(err.reason).toBe("STORAGE_ERROR");
    expect(err.message).toBe("a read worker stopped while it ran this Read; retry");
  }
}

describe("read workers", () => {
  it("run with an 8 MB young generation each, beside a writer's connection with a 16 MB page cache", () => {
    // The soak's resident memory (docs/benchmarks.md): left to V8, a worker's young generation grows to 32 MB.
    const threads = backend.readPool!.threads;
    expect(threads).toHaveLength(2);
    for (const thread of threads) expect(thread.resourceLimits?.maxYoungGenerationSizeMb).toBe(8);
    expect(backend.db.pragma("cache_size", { simple: true })).toBe(-16 * 1024);
  });

  it("fails the Reads of a worker that dies with UNAVAILABLE, then serves Reads on its replacement", async () => {
    const pool = backend.readPool!;
    expect(await newestFive()).toEqual(expectedFive); // both workers up
    const threadsBefore = [...pool.threads];
    expect(threadsBefore).toHaveLength(2);

    // Two full scans, one per worker; the workers die while they run.
    const scan = await plan({ combinedLogRegex: scanningRegex });
    const settled = Promise.allSettled([backend.store.read(scan, signal), backend.store.read(scan, signal)]);
    await nextTurn();
    await Promise.all(threadsBefore.map((t) => t.terminate()));
    expectUnavailable(await settled);

    expect(await newestFive()).toEqual(expectedFive);
    expect(pool.threads.some((t) => threadsBefore.includes(t))).toBe(false);
  });

  it("fails the Reads queued for workers that die while starting, then starts afresh instead of leaving Reads waiting", async () => {
    const pool = backend.readPool!;
    expect(await newestFive()).toEqual(expectedFive);
    await Promise.all(pool.threads.map((t) => t.terminate()));
    // piscina is starting replacements: these Reads wait in its queue for them.
    const starting = [...pool.threads];
    expect(starting).toHaveLength(2);
    const scan = await plan({ count: 5n });
    const settled = Promise.allSettled([backend.store.read(scan, signal), backend.store.read(scan, signal)]);
    await Promise.all(starting.map((t) => t.terminate()));
    expectUnavailable(await settled);

    expect(await newestFive()).toEqual(expectedFive);
    expect(pool.threads).toHaveLength(2);
  });

  it("answers CANCELLED to a Read cancelled while a worker scans", async () => {
    const controller = new AbortController();
    const read = backend.store.read(await plan({ combinedLogRegex: scanningRegex }), controller.signal);
    await nextTurn();
    controller.abort();
    await expect(read).rejects.toMatchObject({ code: Code.CANCELLED });
    expect(await newestFive()).toEqual(expectedFive);
  });

  it("answers Stats on a worker as the writer's connection would, and its refusals as themselves", async () => {
    const stats = (init: Parameters<typeof create<typeof StatsRequestSchema>>[1], max = defaultLimits.maxStatsRecords) =>
      planStats(create(StatsRequestSchema, { appId: "forge", ...init }), { ...limits, maxStatsRecords: max });
    const onWorker = await backend.store.stats(stats({ topN: 3, excludeUserAgentRegex: "^v" }), signal);
    expect(onWorker.records.reduce((n, r) => n + r.requests, 0)).toBe(rows);
    expect(onWorker).toEqual(createStatsReader(backend.db)(stats({ topN: 3, excludeUserAgentRegex: "^v" })));
    await expect(backend.store.stats(stats({ startTime: 0n, resolutionHours: 0, perVersion: true }, 0), signal)).rejects.toMatchObject({
      code: Code.RESOURCE_EXHAUSTED,
      message: expect.stringMatching(/^number of Stats records .* is more than 0, over the limit max-stats-records=0/),
    });
  });

  it("stops a Stats walk with CANCELLED once its call's cancel flag is set, and answers CANCELLED to a cancelled Stats on a worker", async () => {
    const plan = planStats(create(StatsRequestSchema, { appId: "forge", perVersion: true, topN: 3 }), limits);
    const cancel = new Int32Array(new SharedArrayBuffer(4));
    const reader = createStatsReader(backend.db);
    expect(reader(plan, cancel).records.reduce((n, r) => n + r.requests, 0)).toBe(rows);
    Atomics.store(cancel, 0, 1);
    expect(() => reader(plan, cancel)).toThrow(expect.objectContaining({ code: Code.CANCELLED }));

    const controller = new AbortController();
    const stats = backend.store.stats(plan, controller.signal);
    controller.abort();
    await expect(stats).rejects.toMatchObject({ code: Code.CANCELLED });
    expect(await newestFive()).toEqual(expectedFive);
  });

  it("leaves to the calling thread only a time series of at most a month with no per-route, version or bot work", () => {
    const plan = (init: Parameters<typeof create<typeof StatsRequestSchema>>[1]) =>
      planStats(create(StatsRequestSchema, { appId: "forge", startTime: 1_795_000_000n, endTime: 1_795_000_000n + 30n * 86400n, split: StatsSplit.NONE, ...init }), limits);
    expect(readsFewRows(plan({}))).toBe(true);
    expect(readsFewRows(plan({ statusClass: [5], topN: 0 }))).toBe(true);
    expect(readsFewRows(plan({ split: StatsSplit.CLASS }))).toBe(false);
    expect(readsFewRows(plan({ excludeUserAgentRegex: "bot" }))).toBe(false);
    expect(readsFewRows(plan({ perVersion: true }))).toBe(false);
    expect(readsFewRows(plan({ moduleVersion: [{ moduleId: "default" }] }))).toBe(false);
    expect(readsFewRows(plan({ endTime: 1_795_000_000n + 33n * 86400n }))).toBe(false);
    expect(readsFewRows(plan({ startTime: undefined }))).toBe(false);
  });
});

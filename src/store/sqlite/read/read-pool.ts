import { join } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { SqliteError } from "better-sqlite3";
import { Piscina } from "piscina";
import { RequestLogSchema } from "../../../../gen/reqlog/v1/log_service_pb.js";
import { packageRoot } from "../../../package-root.js";
import type { ReadPlan } from "../../../query/read-plan.js";
import type { StatsPlan } from "../../../query/stats-plan.js";
import { ReqlogError } from "../../../reqlog-error.js";
import type { QueryResult, ReadResult, StatsResult } from "../../store.js";
import type { QueryPlan } from "../../../query/logsql/plan-query.js";
import type { ReadTask, ReadTaskResult } from "./read-worker.js";
import { unpackStats } from "./stats-result-codec.js";
import type { SearchIndexUse } from "./snapshot-paging.js";

/**
 * The young generation of each read worker's V8 heap (MB). Left to V8, a
 * worker running regex Reads grew its young generation to 32 MB (V8's
 * largest) and its heap to ~60 MB; at 8 MB the heap stayed at ~28 MB under
 * the same soak (docs/benchmarks.md), and Reads were no slower: a Read's
 * objects die young whatever the size, so only the scavenges come oftener.
 */
export const readWorkerYoungGenerationMb = 8;

/** The compiled worker: tests run the TypeScript sources, but threads need JS (npm test builds first). */
const workerScript = join(packageRoot(), "dist", "src", "store", "sqlite", "read", "read-worker-entry.cjs");

export interface ReadPool {
  /** Runs a Read on a worker; a cancelled call's scan stops at its next budget check. */
  read(plan: ReadPlan, signal: AbortSignal): Promise<ReadResult>;
  /** Runs a Stats plan on a worker; a cancelled call's walk of the rollups stops at its next check. */
  stats(plan: StatsPlan, signal: AbortSignal): Promise<StatsResult>;
  /** Answers a query on a worker; a cancelled call's scan stops at its next budget check. */
  query(plan: QueryPlan, signal: AbortSignal): Promise<QueryResult>;
  /** The worker threads (for tests that stop one). */
  readonly threads: readonly import("node:worker_threads").Worker[];
  close(): Promise<void>;
}

/**
 * Worker threads (a piscina pool) that run Reads and Stats on their own
 * connections to the database file. A worker that dies fails its task with
 * UNAVAILABLE and piscina starts another in its place. A Read's result comes back as
 * serialized records and is decoded here.
 *
 * piscina stops replacing workers once one dies while starting (so that a
 * worker that cannot start is not restarted in a loop), and then Reads
 * would wait in its queue forever: a pool left without workers is
 * destroyed at once (its queued Reads fail with UNAVAILABLE) and the next
 * Read starts a fresh one.
 */
export function createReadPool(path: string, size: number, searchIndex: SearchIndexUse = "auto"): ReadPool {
  const start = () => {
    const pool = new Piscina<ReadTask, ReadTaskResult>({
      filename: workerScript,
      workerData: { path, searchIndex },
      minThreads: size,
      maxThreads: size,
      // Each worker holds a connection and compiled statements: keep them.
      idleTimeout: Number.POSITIVE_INFINITY,
      // A Read runs to its budget on one thread; one at a time per thread.
      concurrentTasksPerWorker: 1,
      resourceLimits: { maxYoungGenerationSizeMb: readWorkerYoungGenerationMb },
    });
    // A worker that fails outside a task: it is replaced (or the pool is, below); nothing to answer.
    pool.on("error", () => {});
    // Checked once piscina is done with the worker (it emits this before removing it and adding a replacement).
    pool.on("workerDestroy", () =>
      setImmediate(() => {
        if (pool.threads.length === 0 && pool === current) {
          current = undefined;
          void pool.destroy();
        }
      }),
    );
    return pool;
  };
  let current: Piscina<ReadTask, ReadTaskResult> | undefined = start();
  let closed = false;

  /**
   * Runs a task on a worker: a worker's failure is UNAVAILABLE, a refusal or
   * storage error is thrown as it was. The task's cancel flag is set when
   * the call's signal aborts: a task still queued then returns at once, a
   * running one stops at its next check.
   */
  async function run(task: ReadTask, signal: AbortSignal): Promise<ReadTaskResult> {
    const onAbort = () => Atomics.store(task.cancel, 0, 1);
    if (signal.aborted) throw ReqlogError.cancelled();
    signal.addEventListener("abort", onAbort, { once: true });
    let reply: ReadTaskResult;
    try {
      if (closed) throw new Error("the read pool is closed");
      current ??= start();
      reply = await current.run(task);
    } catch (err) {
      throw ReqlogError.unavailable(`a read worker stopped while it ran this ${"stats" in task ? "Stats" : "query" in task ? "Query" : "Read"}; retry`, err);
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
    if ("refused" in reply) throw new ReqlogError(reply.refused.code as ReqlogError["code"], reply.refused.reason, reply.refused.message);
    // Rebuilt as a SqliteError so the store maps it as it maps its own.
    if ("error" in reply) {
      throw reply.error.code ? new SqliteError(reply.error.message, reply.error.code) : new Error(reply.error.message);
    }
    if (signal.aborted || ("cancelled" in reply && reply.cancelled)) throw ReqlogError.cancelled();
    return reply;
  }

  const cancelFlag = () => new Int32Array(new SharedArrayBuffer(4));

  return {
    async read(plan, signal) {
      const reply = await run({ plan, cancel: cancelFlag() }, signal);
      if (!("records" in reply)) throw new Error("a read worker answered a Read task with something else");
      return {
        records: reply.records.map((r) => ({ log: fromBinary(RequestLogSchema, r.bytes), cursor: r.cursor })),
        next: reply.next,
        lastSortTime: reply.lastSortTime,
        scanned: reply.scanned,
      };
    },
    async query(plan, signal) {
      const reply = await run({ query: plan, cancel: cancelFlag() }, signal);
      if (!("answer" in reply)) throw new Error("a read worker answered a Query task with something else");
      if (reply.answer.cancelled) throw ReqlogError.cancelled();
      return reply.answer;
    },
    async stats(plan, signal) {
      const reply = await run({ stats: plan, cancel: cancelFlag() }, signal);
      if (!("stats" in reply)) throw new Error("a read worker answered a Stats task with something else");
      return unpackStats(reply.stats);
    },
    get threads() {
      return current?.threads ?? [];
    },
    async close() {
      closed = true;
      await current?.destroy();
      current = undefined;
    },
  };
}

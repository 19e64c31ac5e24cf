import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { fromBinary } from "@bufbuild/protobuf";
import { SqliteError } from "better-sqlite3";
import { RequestLogSchema } from "../../../gen/reqlog/v1/log_service_pb.js";
import { packageRoot } from "../../package-root.js";
import { type LogErrorCode, ReqlogError } from "../../reqlog-error.js";
import type { Cursor } from "../../query/offset-codec.js";
import type { ReadPlan } from "../../query/read-plan.js";
import type { ReadResult } from "../store.js";
import { portablePlan } from "./portable-plan.js";

interface WorkerReply {
  id: number;
  records?: { bytes: Uint8Array; cursor: Cursor }[];
  next?: Cursor;
  lastSortTime?: bigint;
  error?: { message: string; code?: string };
  /** The plan was refused (a ReqlogError in the worker). */
  refused?: { code: number; reason: LogErrorCode; message: string };
}

interface Slot {
  worker: Worker;
  busy: number;
}

/** The compiled worker: tests run the TypeScript sources, but threads need JS (npm test builds first). */
const workerScript = join(packageRoot(), "dist", "src", "store", "sqlite", "read-worker.js");

export interface ReadPool {
  read(plan: ReadPlan): Promise<ReadResult>;
  close(): Promise<void>;
}

/**
 * Worker threads that run Reads on their own connections to the database
 * file. Each Read goes to the least busy worker; its result comes back as
 * serialized records and is decoded here.
 */
export function createReadPool(path: string, size: number): ReadPool {
  const pending = new Map<number, { resolve: (r: ReadResult) => void; reject: (e: unknown) => void; slot: Slot }>();
  let nextId = 0;
  const slots: Slot[] = Array.from({ length: size }, () => {
    const slot: Slot = { worker: new Worker(workerScript, { workerData: { path } }), busy: 0 };
    slot.worker.on("message", (reply: WorkerReply) => {
      const call = pending.get(reply.id);
      if (!call) return;
      pending.delete(reply.id);
      slot.busy--;
      if (reply.refused) {
        call.reject(new ReqlogError(reply.refused.code, reply.refused.reason, reply.refused.message));
        return;
      }
      if (reply.error) {
        // Rebuild a SqliteError so the store maps it as it maps its own.
        call.reject(
          reply.error.code ? new SqliteError(reply.error.message, reply.error.code) : new Error(reply.error.message),
        );
        return;
      }
      call.resolve({
        records: reply.records!.map((r) => ({ log: fromBinary(RequestLogSchema, r.bytes), cursor: r.cursor })),
        next: reply.next,
        lastSortTime: reply.lastSortTime,
      });
    });
    slot.worker.on("error", (err) => {
      for (const [id, call] of pending) {
        if (call.slot === slot) {
          pending.delete(id);
          call.reject(err);
        }
      }
    });
    return slot;
  });

  return {
    read(plan) {
      const slot = slots.reduce((a, b) => (b.busy < a.busy ? b : a));
      const id = nextId++;
      slot.busy++;
      return new Promise<ReadResult>((resolve, reject) => {
        pending.set(id, { resolve, reject, slot });
        slot.worker.postMessage({ id, plan: portablePlan(plan) });
      });
    },
    async close() {
      await Promise.all(slots.map((s) => s.worker.terminate()));
    },
  };
}

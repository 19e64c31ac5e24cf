import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { Piscina } from "piscina";
import {
  type IngestRequest,
  IngestRequestSchema,
  RequestLogSchema,
  type WriteRequest,
  WriteRequestSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import type { PreparedRecord } from "../domain/records.js";
import type { Limits } from "../limits.js";
import { packageRoot } from "../package-root.js";
import type { PrivacyOptions } from "./privacy.js";
import { ReqlogError } from "../reqlog-error.js";
import { attachPrepared } from "./prepared-requests.js";
import type { PrepareResult, PrepareTask, Refusal } from "./prepare-worker.js";

/** The compiled worker: tests run the TypeScript sources, but threads need JS (npm test builds first). */
const workerScript = join(packageRoot(), "dist", "src", "write", "prepare-worker-entry.cjs");

/**
 * Decodes and validates Write and Ingest requests on worker threads (a
 * piscina pool; one on a two-core machine, the other core being the
 * store's). Each resolves to a stand-in message of the request's type with
 * the prepared batch attached (prepared-requests.ts): the handler then
 * authorizes and stores it, as for a message decoded on its own thread.
 */
export interface PreparePool {
  write(bytes: Uint8Array): Promise<WriteRequest>;
  ingest(bytes: Uint8Array): Promise<IngestRequest>;
  /** Requests the workers have prepared so far. */
  readonly completed: number;
  close(): Promise<void>;
}

// protobuf-es keeps a message's field defaults on its prototype; a message
// that crossed threads is a plain object with its own (set) fields only.
const requestLogPrototype = Object.getPrototypeOf(create(RequestLogSchema)) as object;

const errorOf = (refusal: Refusal | undefined) =>
  refusal && new ReqlogError(refusal.code as ReqlogError["code"], refusal.reason, refusal.message);

function revive(records: PreparedRecord[]): PreparedRecord[] {
  for (const record of records) Object.setPrototypeOf(record.log, requestLogPrototype);
  return records;
}

export function createPreparePool(threads: number, limits: Limits, privacyOptions: PrivacyOptions): PreparePool {
  const pool = new Piscina<PrepareTask, PrepareResult>({
    filename: workerScript,
    workerData: { limits, privacyOptions },
    minThreads: threads,
    maxThreads: threads,
    idleTimeout: Number.POSITIVE_INFINITY,
  });
  pool.on("error", () => {});

  async function run(kind: PrepareTask["kind"], bytes: Uint8Array): Promise<PrepareResult> {
    let result: PrepareResult;
    try {
      // The request's own bytes, moved to the worker: the transport's buffer
      // may be a view of a larger one, which a copy to the worker would take whole.
      const own = new Uint8Array(bytes);
      result = await pool.run({ kind, bytes: own }, { transferList: [own.buffer] });
    } catch (err) {
      throw ReqlogError.unavailable("a prepare worker stopped while it decoded this request; retry", err);
    }
    if ("refused" in result) throw errorOf(result.refused)!;
    return result;
  }

  return {
    async write(bytes) {
      const result = (await run("write", bytes)) as Extract<PrepareResult, { write: unknown }>;
      const batch = result.write;
      return attachPrepared(create(WriteRequestSchema), {
        ...batch,
        records: revive(batch.records),
        tooMany: errorOf(batch.tooMany),
        invalid: errorOf(batch.invalid),
      });
    },
    async ingest(bytes) {
      const result = (await run("ingest", bytes)) as Extract<PrepareResult, { ingest: unknown }>;
      const batch = result.ingest;
      return attachPrepared(create(IngestRequestSchema, { batchId: batch.batchId }), {
        ...batch,
        records: revive(batch.records),
        invalid: errorOf(batch.invalid),
      });
    },
    get completed() {
      return pool.completed;
    },
    async close() {
      await pool.destroy();
    },
  };
}

/**
 * A read worker: a thread with its own connection to the database file that
 * runs Read plans, so a long scan never holds the event loop (and with it
 * the writers) back. WAL lets it read while the main thread writes.
 */
import { parentPort, workerData } from "node:worker_threads";
import { toBinary } from "@bufbuild/protobuf";
import Database from "better-sqlite3";
import { RequestLogSchema } from "../../../gen/reqlog/v1/log_service_pb.js";
import { ReqlogError } from "../../reqlog-error.js";
import { revivePlan, type PortablePlan } from "./portable-plan.js";
import { createSqliteReader } from "./sqlite-reader.js";

const { path } = workerData as { path: string };
const db = new Database(path, { fileMustExist: true });
db.pragma("busy_timeout = 5000");
db.pragma("query_only = ON");
const reader = createSqliteReader(db);

parentPort!.on("message", ({ id, plan }: { id: number; plan: PortablePlan }) => {
  try {
    const result = reader.read(revivePlan(plan));
    parentPort!.postMessage({
      id,
      records: result.records.map((r) => ({ bytes: toBinary(RequestLogSchema, r.log), cursor: r.cursor })),
      next: result.next,
      lastSortTime: result.lastSortTime,
    });
  } catch (err) {
    if (err instanceof ReqlogError) {
      parentPort!.postMessage({ id, refused: { code: err.code, reason: err.reason, message: err.message } });
      return;
    }
    const e = err as { message?: string; code?: string };
    parentPort!.postMessage({ id, error: { message: e.message ?? String(err), code: e.code } });
  }
});

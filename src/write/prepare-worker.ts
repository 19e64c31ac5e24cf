/**
 * A prepare worker (run by the piscina pool in prepare-pool.ts): decodes a
 * Write or Ingest request and validates it (prepare-batches.ts) on a thread
 * of its own, so the main thread, which runs the store, does not. It never
 * throws: a refusal comes back as a value.
 */
import { workerData } from "node:worker_threads";
import { IngestRequestSchema, WriteRequestSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import type { Limits } from "../limits.js";
import { ReqlogError } from "../reqlog-error.js";
import { decodeMessage } from "./decode-message.js";
import { type PreparedIngest, type PreparedWrite, prepareIngest, prepareWrite } from "./prepare-batches.js";
import { createPrivacy, type PrivacyOptions } from "./privacy.js";
import { verifyUtf8 } from "./strict-utf8.js";

export interface PrepareTask {
  kind: "write" | "ingest";
  bytes: Uint8Array;
}

/** A ReqlogError as data (an Error does not cross threads with its fields). */
export interface Refusal {
  code: number;
  reason: ReqlogError["reason"];
  message: string;
}

type Plain<T> = { [K in keyof T]: T[K] extends ReqlogError | undefined ? Refusal | undefined : T[K] };

export type PrepareResult =
  | { write: Plain<PreparedWrite> }
  | { ingest: Plain<PreparedIngest> }
  | { refused: Refusal };

const { limits, privacyOptions } = workerData as { limits: Limits; privacyOptions: PrivacyOptions };
const privacy = createPrivacy(privacyOptions);
verifyUtf8(WriteRequestSchema);
verifyUtf8(IngestRequestSchema);

const plain = (err: ReqlogError | undefined): Refusal | undefined =>
  err && { code: err.code, reason: err.reason, message: err.message };

export default function prepare({ kind, bytes }: PrepareTask): PrepareResult {
  try {
    if (kind === "write") {
      const batch = prepareWrite(decodeMessage(WriteRequestSchema, bytes), limits, privacy);
      return { write: { ...batch, tooMany: plain(batch.tooMany), invalid: plain(batch.invalid) } };
    }
    const batch = prepareIngest(decodeMessage(IngestRequestSchema, bytes), limits, privacy);
    return { ingest: { ...batch, invalid: plain(batch.invalid) } };
  } catch (err) {
    return { refused: plain(ReqlogError.from(err))! };
  }
}

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LogReadRequestSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { defaultLimits } from "../../src/limits.js";
import { createOffsetCodec } from "../../src/query/offset-codec.js";
import { planRead } from "../../src/query/read-plan.js";
import { Code, ReqlogError } from "../../src/reqlog-error.js";
import { openSqliteBackend, type SqliteBackend } from "../../src/store/sqlite/sqlite-backend.js";
import { prepareRequestLog } from "../../src/write/prepare-request-log.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";

let dir: string;
let backend: SqliteBackend;
const signal = new AbortController().signal;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "reqlog-pool-"));
  backend = openSqliteBackend({ path: join(dir, "reqlog.db"), readWorkers: 2, now: () => t0 });
  await backend.store.write(
    Array.from({ length: 50 }, (_, i) =>
      prepareRequestLog(minimalLog({ requestId: rid(`r${i}`), endTime: t0 + BigInt(i) }), defaultLimits, "log[0]"),
    ),
    signal,
  );
});
afterEach(async () => {
  await backend.close();
  rmSync(dir, { recursive: true, force: true });
});

async function plan(init: Parameters<typeof create<typeof LogReadRequestSchema>>[1] = {}) {
  const offsets = createOffsetCodec(await backend.store.offsetKey(signal));
  return planRead(create(LogReadRequestSchema, { appId: "forge", ...init }), defaultLimits, offsets);
}

describe("read workers", () => {
  it("fails the Reads of a worker that dies with UNAVAILABLE, then serves Reads on its replacement", async () => {
    const pool = backend.readPool!;
    // Both workers up and warm.
    await Promise.all([backend.store.read(await plan(), signal), backend.store.read(await plan(), signal)]);
    const threadsBefore = [...pool.threads];
    expect(threadsBefore).toHaveLength(2);

    const p = await plan({ count: 5n });
    const settled = Promise.allSettled([backend.store.read(p, signal), backend.store.read(p, signal)]);
    // Both Reads are posted to their workers; neither reply can have been handled yet.
    await Promise.all(threadsBefore.map((t) => t.terminate()));
    for (const outcome of await settled) {
      expect(outcome.status).toBe("rejected");
      const err = (outcome as PromiseRejectedResult).reason as ReqlogError;
      expect(err).toBeInstanceOf(ReqlogError);
      expect(err.code).toBe(Code.UNAVAILABLE);
      expect(err.reason).toBe("STORAGE_ERROR");
      expect(err.message).toMatch(/read worker stopped/);
    }

    const after = await backend.store.read(p, signal);
    expect(after.records.map((r) => new TextDecoder().decode(r.log.requestId))).toEqual(["r49", "r48", "r47", "r46", "r45"]);
    expect(pool.threads.some((t) => threadsBefore.includes(t))).toBe(false);
  });

  it("answers CANCELLED to a Read cancelled while a worker runs it", async () => {
    const controller = new AbortController();
    const p = await plan({ combinedLogRegex: "never-in-any-line" });
    const read = backend.store.read(p, controller.signal);
    controller.abort();
    await expect(read).rejects.toMatchObject({ code: Code.CANCELLED });
  });
});

import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { status } from "@grpc/grpc-js";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import {
  LogLineSchema,
  LogReadRequestSchema,
  type LogReadResponse,
  LogUsageRequestSchema,
  type LogUsageResponse,
  type RequestLog,
  WriteRequestSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { createLogger } from "../../src/logger.js";
import { startHousekeeping } from "../../src/store/housekeeping.js";
import { minimalLog, rid } from "../helpers/fixtures.js";
import { callError, unaryCall } from "../helpers/test-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const dir = mkdtempSync(join(tmpdir(), "reqlog-retention-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let ts: TestServer;
afterEach(async () => {
  await ts.close();
});

const day = 86_400_000_000n;
const now = 1_795_300_000_000_000n;

async function write(logs: RequestLog[]) {
  for (let i = 0; i < logs.length; i += 1000) {
    await unaryCall(ts.client, "write", create(WriteRequestSchema, { log: logs.slice(i, i + 1000) }));
  }
}

const housekeeping = (retentionDays: number) =>
  startHousekeeping(ts.store, {
    retentionMs: retentionDays * 86_400_000,
    intervalMs: 3_600_000,
    batch: 100,
    now: () => now,
    logger: createLogger("silent"),
  });

describe("retention", () => {
  it("deletes requests older than the retention, with their lines, and nothing else", async () => {
    ts = await startTestServer({ now });
    const line = create(LogLineSchema, { time: now - 40n * day, level: 1, logMessage: "old" });
    await write(
      Array.from({ length: 450 }, (_, i) =>
        minimalLog({
          requestId: rid(`old${i}`),
          startTime: now - 40n * day,
          endTime: now - 40n * day + BigInt(i),
          line: [line],
        }),
      ),
    );
    await write([
      minimalLog({ requestId: rid("edge"), startTime: now - 30n * day, endTime: now - 30n * day }),
      minimalLog({ requestId: rid("new"), startTime: now - day, endTime: now - day }),
    ]);
    const hk = housekeeping(30);
    expect(await hk.runOnce()).toBe(450);
    await hk.stop();

    const read = await unaryCall<LogReadResponse>(ts.client, "read", create(LogReadRequestSchema, { appId: "forge", count: 1000n }));
    expect(read.log.map((l) => new TextDecoder().decode(l.requestId))).toEqual(["new", "edge"]);
    expect(ts.db.prepare("SELECT count(*) FROM lines").pluck().get()).toBe(0);
    const usage = await unaryCall<LogUsageResponse>(ts.client, "usage", create(LogUsageRequestSchema, { appId: "forge" }));
    expect(Number(usage.summary!.count)).toBe(2);
    expect(usage.summary!.records).toBe(0);
  });

  it("refuses an offset older than the paging history it pruned", async () => {
    ts = await startTestServer({ now: now - 2n * day });
    await write(Array.from({ length: 5 }, (_, i) => minimalLog({ requestId: rid(`r${i}`), endTime: now - 3n * day + BigInt(i) })));
    const page = await unaryCall<LogReadResponse>(ts.client, "read", create(LogReadRequestSchema, { appId: "forge", count: 2n }));
    // A change after the page; a run two days ago marks the sequence then; a
    // run now prunes the history of changes over 24 h old, which the
    // offset's snapshot (taken before that change) would need.
    await write([minimalLog({ requestId: rid("later"), endTime: now - 3n * day })]);
    await ts.store.compact(0n, 0);
    const stillValid = await unaryCall<LogReadResponse>(ts.client, "read", create(LogReadRequestSchema, { appId: "forge", count: 2n, offset: page.offset! }));
    expect(stillValid.log).toHaveLength(2);
    ts.setNow(now);
    await ts.store.compact(now - day, 0);
    const err = await callError(
      unaryCall(ts.client, "read", create(LogReadRequestSchema, { appId: "forge", count: 2n, offset: page.offset! })),
    );
    expect(err).toEqual({
      code: status.INVALID_ARGUMENT,
      details: "offset expired: it is over 24 hours old; start the read again without it",
      reason: "INVALID_REQUEST",
    });
  });

  it("returns the space of deleted requests to the file system", async () => {
    const path = join(dir, "shrink.db");
    ts = await startTestServer({ now, dbPath: path });
    await write(
      Array.from({ length: 6000 }, (_, i) =>
        minimalLog({ requestId: rid(`r${i}`), startTime: now - 40n * day, endTime: now - 40n * day + BigInt(i), userAgent: "u".repeat(500) }),
      ),
    );
    ts.db.pragma("wal_checkpoint(TRUNCATE)");
    const before = statSync(path).size;
    const hk = housekeeping(30);
    expect(await hk.runOnce()).toBe(6000);
    await hk.stop();
    ts.db.pragma("wal_checkpoint(TRUNCATE)");
    const after = statSync(path).size;
    expect(before).toBeGreaterThan(3_000_000);
    expect(after).toBeLessThan(before / 4);
  });
});

import { statSync } from "node:fs";
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { LogLineSchema, type LogReadResponse, type RequestLog } from "../../gen/reqlog/v1/log_service_pb.js";
import { Code } from "../../src/reqlog-error.js";
import { createLogger } from "../../src/logger.js";
import { startHousekeeping } from "../../src/store/housekeeping.js";
import { minimalLog, rid } from "../helpers/fixtures.js";
import { callError } from "../helpers/test-client.js";
import { useTestServer } from "../helpers/test-server.js";

const day = 86_400_000_000n;
const now = 1_795_300_000_000_000n;

const ts = useTestServer({ now });
const never = new AbortController().signal;

async function write(logs: RequestLog[]) {
  for (let i = 0; i < logs.length; i += 1000) await ts.write(...logs.slice(i, i + 1000));
}

const housekeeping = (retentionDays: number) =>
  startHousekeeping(ts.backend.maintenance, {
    retentionMs: retentionDays * 86_400_000,
    intervalMs: 3_600_000,
    batch: 100,
    now: () => now,
    logger: createLogger("silent"),
  });

/** One run of housekeeping with a 30-day retention; returns how many requests it deleted. */
async function expireOlderThan30Days(): Promise<number> {
  const hk = housekeeping(30);
  try {
    return await hk.runOnce();
  } finally {
    await hk.stop();
  }
}

const ids = (r: LogReadResponse) => r.log.map((l) => new TextDecoder().decode(l.requestId));

describe("retention", () => {
  it("deletes requests older than the retention, with their lines, and nothing else", async () => {
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
    expect(await expireOlderThan30Days()).toBe(450);

    expect(ids(await ts.read({ count: 1000n }))).toEqual(["new", "edge"]);
    // Lines go with their request's row; none of the expired ones' lines are counted anywhere.
    expect(ts.db.prepare("SELECT count(*) FROM requests WHERE lines IS NOT NULL").pluck().get()).toBe(0);
    const usage = await ts.client.usage({ appId: "forge" });
    expect(Number(usage.summary!.count)).toBe(2);
    expect(usage.summary!.records).toBe(0);
  });

  it("refuses an offset older than the paging history it pruned", async () => {
    ts.setNow(now - 2n * day);
    await write(Array.from({ length: 5 }, (_, i) => minimalLog({ requestId: rid(`r${i}`), endTime: now - 3n * day + BigInt(i) })));
    const page = await ts.read({ count: 2n });
    // A change after the page; a run two days ago marks the sequence then; a
    // run now prunes the history of changes over 24 h old, which the
    // offset's snapshot (taken before that change) would need.
    await write([minimalLog({ requestId: rid("later"), endTime: now - 3n * day })]);
    await ts.backend.maintenance.compact(0n, never);
    const stillValid = await ts.read({ count: 2n, offset: page.offset! });
    expect(stillValid.log).toHaveLength(2);
    ts.setNow(now);
    await ts.backend.maintenance.compact(now - day, never);
    const err = await callError(ts.read({ count: 2n, offset: page.offset! }));
    expect(err).toEqual({
      code: Code.INVALID_ARGUMENT,
      details: "offset expired: it is over 24 hours old; start the read again without it",
      reason: "INVALID_REQUEST",
    });
  });

  it("returns the space of deleted requests to the file system", async () => {
    const path = ts.db.name;
    await write(
      Array.from({ length: 6000 }, (_, i) =>
        // A long resource of its own (a user agent, or a constant start of a resource, is stored once for all).
        minimalLog({ requestId: rid(`r${i}`), startTime: now - 40n * day, endTime: now - 40n * day + BigInt(i), resource: `/${i}/${"u".repeat(500)}` }),
      ),
    );
    ts.db.pragma("wal_checkpoint(TRUNCATE)");
    const before = statSync(path).size;
    expect(await expireOlderThan30Days()).toBe(6000);
    ts.db.pragma("wal_checkpoint(TRUNCATE)");
    const after = statSync(path).size;
    expect(before).toBeGreaterThan(3_000_000);
    expect(after).toBeLessThan(before / 4);
  });
});

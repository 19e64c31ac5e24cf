import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { afterAll, describe, expect, it } from "vitest";
import {
  FlushRequestSchema,
  LogService,
  UserAppLogGroupSchema,
  UserAppLogLineSchema,
  WriteRequestSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { systemClock } from "../../src/clock.js";
import { openDatabase } from "../../src/store/sqlite/open-database.js";
import { createSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { startChildServer } from "../helpers/child-server.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { createTestClient, unaryCall } from "../helpers/test-client.js";

const dir = mkdtempSync(join(tmpdir(), "reqlog-crash-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Acked {
  records: string[];
  flushed: string[];
}

/**
 * Writers send Writes and Flushes as fast as they are acknowledged until the
 * server dies; returns what was acknowledged.
 */
async function loadUntilKilled(address: string, cycle: number, kill: () => void): Promise<Acked> {
  const client = createTestClient(LogService, address);
  const acked: Acked = { records: [], flushed: [] };
  let alive = true;
  const writer = async (w: number) => {
    for (let i = 0; alive; i++) {
      const id = `c${cycle}-w${w}-${i}`;
      try {
        if (i % 3 === 2) {
          const logs = toBinary(
            UserAppLogGroupSchema,
            create(UserAppLogGroupSchema, {
              logLine: [create(UserAppLogLineSchema, { timestampUsec: t0 + BigInt(i), level: 1n, message: id })],
            }),
          );
          await unaryCall(client, "flush", create(FlushRequestSchema, { logs }), {
            "reqlog-app-id": "forge",
            "reqlog-version-id": "v1",
            "reqlog-request-id": id,
          });
          acked.flushed.push(id);
        } else {
          await unaryCall(client, "write", create(WriteRequestSchema, {
            log: [minimalLog({ requestId: rid(id), endTime: t0 + BigInt(i), status: 200 })],
          }));
          acked.records.push(id);
        }
      } catch {
        alive = false;
      }
    }
  };
  const writers = Array.from({ length: 8 }, (_, w) => writer(w));
  setTimeout(kill, 400 + cycle * 97);
  await Promise.all(writers);
  client.close();
  return acked;
}


describe("crash safety", () => {
  it("keeps every acknowledged write across repeated kill -9", async () => {
    const db = join(dir, "crash.db");
    const all: Acked = { records: [], flushed: [] };
    for (let cycle = 0; cycle < 3; cycle++) {
      const server = await startChildServer(["--listen", "127.0.0.1:0", "--db", db]);
      const acked = await loadUntilKilled(server.address, cycle, () => server.process.kill("SIGKILL"));
      expect((await server.exited).signal).toBe("SIGKILL");
      expect(acked.records.length).toBeGreaterThan(10);
      all.records.push(...acked.records);
      all.flushed.push(...acked.flushed);
    }
    // A fresh open recovers the WAL; every acknowledged write must be there.
    const database = openDatabase({ path: db });
    try {
      expect(database.pragma("integrity_check", { simple: true })).toBe("ok");
      const store = createSqliteStore(database, systemClock);
      const records = store.getRequests("forge", all.records.map(rid));
      expect(records.map((r) => new TextDecoder().decode(r.requestId))).toEqual(all.records);
      expect(records.every((r) => r.finished && r.status === 200)).toBe(true);
      const flushed = store.getRequests("forge", all.flushed.map(rid));
      expect(flushed.map((r) => r.line.map((l) => l.logMessage))).toEqual(all.flushed.map((id) => [id]));
    } finally {
      database.close();
    }
  });
});

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, equals } from "@bufbuild/protobuf";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import {
  LogLineSchema,
  type LogReadResponse,
  LogReadResponseSchema,
  type RequestLog,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { callError } from "../helpers/test-client.js";
import { startTestServer, type TestServer, type TestServerOptions } from "../helpers/test-server.js";

const dir = mkdtempSync(join(tmpdir(), "reqlog-workers-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

async function serve(options: TestServerOptions): Promise<TestServer> {
  const ts = await startTestServer(options);
  servers.push(ts);
  return ts;
}

async function seed(ts: TestServer, n: number) {
  for (let i = 0; i < n; i += 1000) {
    const logs: RequestLog[] = [];
    for (let j = i; j < Math.min(n, i + 1000); j++) {
      logs.push(minimalLog({
        requestId: rid(`r${j}`), endTime: t0 + BigInt(j), resource: `/${"a".repeat(60)}/${j}`, host: "forge.example",
        line: [create(LogLineSchema, { time: t0 + BigInt(j), level: j % 5, logMessage: `line ${j}` })],
      }));
    }
    await ts.write(...logs);
  }
}

describe("read workers", () => {
  it("answer exactly as reads on the main thread do", async () => {
    const path = join(dir, "same.db");
    const inThread = await serve({ dbPath: path, readWorkers: 0 });
    await seed(inThread, 500);
    const workers = await serve({ dbPath: path, readWorkers: 2 });
    // The comparison is between the two read paths: the first server has no pool, the second runs Reads on it.
    expect(inThread.backend.readPool).toBeUndefined();
    expect(workers.backend.readPool?.threads).toHaveLength(2);
    for (const init of [
      { count: 50n, includeAppLogs: true, minimumLogLevel: 3 },
      { count: 7n, combinedLogRegex: '/1\\d\\d"', includeAll: true },
      { count: 1000n, hostRegex: "^forge" },
    ]) {
      const a = await inThread.read(init);
      const b = await workers.read(init);
      expect(b.log.length).toBeGreaterThan(0);
      // Offsets carry the snapshot, which the two servers took at different times; compare the rest.
      const strip = (r: LogReadResponse) => ({ ...r, offset: undefined, log: r.log.map((l) => ({ ...l, offset: undefined })) });
      expect(equals(LogReadResponseSchema, create(LogReadResponseSchema, strip(a)), create(LogReadResponseSchema, strip(b)))).toBe(true);
    }
    const err = await callError(workers.read({ combinedLogRegex: "(" }));
    expect(err.details).toBe("combined_log_regex is not a valid RE2 pattern: missing ): (");
  });

  it("let a write complete while a long read is still scanning", async () => {
    const ts = await serve({ readWorkers: 1, limits: { readScanMs: 60_000, readScanRows: 10_000_000 } });
    await seed(ts, 30_000);
    const order: string[] = [];
    const read = ts.read({ combinedLogRegex: "(a+)+b" }).then(() => order.push("read"));
    await new Promise((r) => setTimeout(r, 20));
    const write = ts.write(minimalLog({ requestId: rid("during"), endTime: t0 })).then(() => order.push("write"));
    await Promise.all([read, write]);
    expect(order).toEqual(["write", "read"]);
  });
});

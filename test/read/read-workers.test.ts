import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, equals } from "@bufbuild/protobuf";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import {
  LogLineSchema,
  LogReadRequestSchema,
  type LogReadResponse,
  LogReadResponseSchema,
  type RequestLog,
  WriteRequestSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { callError, unaryCall } from "../helpers/test-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

const dir = mkdtempSync(join(tmpdir(), "reqlog-workers-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

async function seed(ts: TestServer, n: number) {
  for (let i = 0; i < n; i += 1000) {
    const logs: RequestLog[] = [];
    for (let j = i; j < Math.min(n, i + 1000); j++) {
      logs.push(minimalLog({
        requestId: rid(`r${j}`), endTime: t0 + BigInt(j), resource: `/${"a".repeat(60)}/${j}`, host: "forge.example",
        line: [create(LogLineSchema, { time: t0 + BigInt(j), level: j % 5, logMessage: `line ${j}` })],
      }));
    }
    await unaryCall(ts.client, "write", create(WriteRequestSchema, { log: logs }));
  }
}

describe("read workers", () => {
  it("answer exactly as reads on the main thread do", async () => {
    const path = join(dir, "same.db");
    const inThread = await startTestServer({ dbPath: path });
    servers.push(inThread);
    await seed(inThread, 500);
    const workers = await startTestServer({ dbPath: path, readWorkers: 2 });
    servers.push(workers);
    for (const init of [
      { count: 50n, includeAppLogs: true, minimumLogLevel: 3 },
      { count: 7n, combinedLogRegex: '/1\\d\\d"', includeAll: true },
      { count: 1000n, hostRegex: "^forge" },
    ]) {
      const request = create(LogReadRequestSchema, { appId: "forge", ...init });
      const a = await unaryCall<LogReadResponse>(inThread.client, "read", request);
      const b = await unaryCall<LogReadResponse>(workers.client, "read", request);
      expect(b.log.length).toBeGreaterThan(0);
      // Offsets carry the snapshot, which the two servers took at different times; compare the rest.
      const strip = (r: LogReadResponse) => ({ ...r, offset: undefined, log: r.log.map((l) => ({ ...l, offset: undefined })) });
      expect(equals(LogReadResponseSchema, create(LogReadResponseSchema, strip(a)), create(LogReadResponseSchema, strip(b)))).toBe(true);
    }
    const err = await callError(unaryCall(workers.client, "read", create(LogReadRequestSchema, { appId: "forge", combinedLogRegex: "(" })));
    expect(err.details).toBe("combined_log_regex is not a valid RE2 pattern: missing ): (");
  });

  it("let a write complete while a long read is still scanning", async () => {
    const ts = await startTestServer({ dbPath: join(dir, "busy.db"), readWorkers: 1, limits: { readScanMs: 60_000, readScanRows: 10_000_000 } });
    servers.push(ts);
    await seed(ts, 30_000);
    const order: string[] = [];
    const read = unaryCall(ts.client, "read", create(LogReadRequestSchema, { appId: "forge", combinedLogRegex: "(a+)+b" })).then(() => order.push("read"));
    await new Promise((r) => setTimeout(r, 20));
    const write = unaryCall(ts.client, "write", create(WriteRequestSchema, { log: [minimalLog({ requestId: rid("during"), endTime: t0 })] })).then(() => order.push("write"));
    await Promise.all([read, write]);
    expect(order).toEqual(["write", "read"]);
  });
});

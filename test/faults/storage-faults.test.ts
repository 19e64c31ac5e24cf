import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { status } from "@grpc/grpc-js";
import { afterAll, describe, expect, it } from "vitest";
import {
  LogReadRequestSchema,
  type LogReadResponse,
  type RequestLog,
  WriteRequestSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { runCli } from "../../bench/harness/child-server.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { callError, unaryCall } from "../helpers/test-client.js";
import { startTestServer } from "../helpers/test-server.js";

const dir = mkdtempSync(join(tmpdir(), "reqlog-faults-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const batch = (from: number, n: number): RequestLog[] =>
  Array.from({ length: n }, (_, i) =>
    minimalLog({ requestId: rid(`r${from + i}`), endTime: t0 + BigInt(from + i), userAgent: "x".repeat(400) }),
  );

describe("storage faults", () => {
  it("answers a full disk with UNAVAILABLE, keeps serving reads and stored data, and resumes writes after", async () => {
    const ts = await startTestServer({ dbPath: join(dir, "full.db") });
    try {
      await unaryCall(ts.client, "write", create(WriteRequestSchema, { log: batch(0, 100) }));
      // The disk "fills": the file may not grow past its size now.
      const pages = ts.db.pragma("page_count", { simple: true }) as number;
      ts.db.pragma(`max_page_count = ${pages}`);
      let refused: Awaited<ReturnType<typeof callError>> | undefined;
      for (let i = 1; i < 50 && !refused; i++) {
        refused = await callError(unaryCall(ts.client, "write", create(WriteRequestSchema, { log: batch(i * 100, 100) }))).catch(() => undefined);
      }
      expect(refused).toEqual({ code: status.UNAVAILABLE, details: "storage is full, retry later", reason: "STORAGE_ERROR" });
      // A new app's first write fails while the disk is full (its app row is rolled back with it).
      const lateApp = () => create(WriteRequestSchema, { log: batch(200_000, 50).map((l) => ({ ...l, appId: "late" })) });
      expect((await callError(unaryCall(ts.client, "write", lateApp()))).code).toBe(status.UNAVAILABLE);

      const read = await unaryCall<LogReadResponse>(ts.client, "read", create(LogReadRequestSchema, { appId: "forge", count: 1000n }));
      expect(read.log.length).toBeGreaterThanOrEqual(100);
      expect(ts.db.pragma("integrity_check", { simple: true })).toBe("ok");
      const before = read.log.length;

      ts.db.pragma("max_page_count = 1073741823");
      await unaryCall(ts.client, "write", create(WriteRequestSchema, { log: batch(100_000, 100) }));
      const after = await unaryCall<LogReadResponse>(ts.client, "read", create(LogReadRequestSchema, { appId: "forge", count: 1000n }));
      expect(after.log.length).toBe(before + 100);
      // The retried write of the new app is stored under that app, not under a key that was rolled back.
      await unaryCall(ts.client, "write", lateApp());
      const late = await unaryCall<LogReadResponse>(ts.client, "read", create(LogReadRequestSchema, { appId: "late", count: 1000n }));
      expect(late.log).toHaveLength(50);
    } finally {
      await ts.close();
    }
  });

  it("answers writes to a read-only database with UNAVAILABLE and resumes when it is writable again", async () => {
    const ts = await startTestServer({ dbPath: join(dir, "ro.db") });
    try {
      await unaryCall(ts.client, "write", create(WriteRequestSchema, { log: batch(0, 3) }));
      ts.db.pragma("query_only = ON");
      const err = await callError(unaryCall(ts.client, "write", create(WriteRequestSchema, { log: batch(10, 3) })));
      expect(err).toEqual({ code: status.UNAVAILABLE, details: "storage is read-only, retry later", reason: "STORAGE_ERROR" });
      const read = await unaryCall<LogReadResponse>(ts.client, "read", create(LogReadRequestSchema, { appId: "forge" }));
      expect(read.log).toHaveLength(3);
      ts.db.pragma("query_only = OFF");
      await unaryCall(ts.client, "write", create(WriteRequestSchema, { log: batch(10, 3) }));
      expect((await unaryCall<LogReadResponse>(ts.client, "read", create(LogReadRequestSchema, { appId: "forge" }))).log).toHaveLength(6);
    } finally {
      await ts.close();
    }
  });

  it("refuses to start on a file that is not a database, saying so", async () => {
    const path = join(dir, "corrupt.db");
    writeFileSync(path, "this is not an SQLite database, just some text that is long enough to look like a header".repeat(100));
    const { code, stderr } = await runCli(["serve", "--listen", "127.0.0.1:0", "--db", path]);
    expect(code).toBe(2);
    expect(stderr).toBe("reqlog: file is not a database\n");
  });
});

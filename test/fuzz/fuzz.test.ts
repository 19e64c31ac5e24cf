import { create, equals } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HealthCheckRequestSchema, type HealthCheckResponse, Health } from "../../gen/health/v1/health_pb.js";
import { LogReadRequestSchema, type LogReadResponse, LogReadResponseSchema, WriteRequestSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { fuzz } from "../../bench/harness/fuzz.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { createTestClient, unaryCall } from "../helpers/test-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let ts: TestServer;
beforeAll(async () => {
  ts = await startTestServer({ limits: { maxMessageBytes: 256 * 1024 } });
});
afterAll(async () => {
  await ts.close();
});

describe("fuzzing every RPC", () => {
  it("answers hostile messages without INTERNAL, stays up, and leaves stored data as it was", async () => {
    await unaryCall(ts.client, "write", create(WriteRequestSchema, {
      log: Array.from({ length: 20 }, (_, i) => minimalLog({ requestId: rid(`kept${i}`), endTime: t0 + BigInt(i) })),
    }));
    const before = await unaryCall<LogReadResponse>(ts.client, "read", create(LogReadRequestSchema, { appId: "forge", count: 100n }));

    const report = await fuzz(ts.client, 3000, 7);
    expect(report.failures).toEqual([]);
    expect(report.transportResets).toBeLessThan(report.sent / 100);
    expect(report.sent).toBe(3000);
    expect(report.codes.INVALID_ARGUMENT).toBeGreaterThan(500); // most hostile messages are refused as bad input

    const health = createTestClient(Health, ts.server.address);
    const h = await unaryCall<HealthCheckResponse>(health, "check", create(HealthCheckRequestSchema, {}));
    expect(h.status).toBe(1); // SERVING
    health.close();
    expect(ts.db.pragma("integrity_check", { simple: true })).toBe("ok");
    const after = await unaryCall<LogReadResponse>(ts.client, "read", create(LogReadRequestSchema, { appId: "forge", count: 100n }));
    const strip = (r: LogReadResponse) => create(LogReadResponseSchema, { log: r.log.map((l) => ({ ...l, offset: undefined })) });
    expect(equals(LogReadResponseSchema, strip(after), strip(before))).toBe(true);
  });
});

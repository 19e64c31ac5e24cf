import { create, equals } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { HealthCheckResponse_ServingStatus as ServingStatus } from "../../gen/health/v1/health_pb.js";
import { type LogReadResponse, LogReadResponseSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { fuzz, fuzzedRpcs } from "../../bench/harness/fuzz.js";
import { LogsService } from "../../gen/opentelemetry/proto/collector/logs/v1/logs_service_pb.js";
import { LogService } from "../../gen/reqlog/v1/log_service_pb.js";
import { createHealthClient } from "../../bench/harness/health-client.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { useTestServer } from "../helpers/test-server.js";

const ts = useTestServer({ limits: { maxMessageBytes: 256 * 1024 } });

describe("fuzzing every RPC", () => {
  it("sends to every RPC the server serves, the LogService's and OTLP's Export", () => {
    const served = [LogService, LogsService].flatMap((service) => service.methods.map((m) => `${service.typeName}/${m.name}`));
    expect([...fuzzedRpcs].sort()).toEqual(served.sort());
  });

  it("answers hostile messages without INTERNAL, stays up, and leaves stored data as it was", async () => {
    await ts.write(...Array.from({ length: 20 }, (_, i) => minimalLog({ requestId: rid(`kept${i}`), endTime: t0 + BigInt(i) })));
    const before = await ts.read({ count: 100n });

    const report = await fuzz(ts.server.address, 3000, 7);
    expect(report.failures).toEqual([]);
    expect(report.transportResets).toBeLessThan(report.sent / 100);
    expect(report.sent).toBe(3000);
    for (const rpc of fuzzedRpcs) expect(report.byMethod[rpc.split("/")[1]!], rpc).toBeGreaterThan(100);
    expect(report.codes.INVALID_ARGUMENT).toBeGreaterThan(500); // most hostile messages are refused as bad input

    const health = createHealthClient(ts.server.address);
    try {
      expect((await health.check({})).status).toBe(ServingStatus.SERVING);
    } finally {
      health.close();
    }
    expect(ts.db.pragma("integrity_check", { simple: true })).toBe("ok");
    const after = await ts.read({ count: 100n });
    const strip = (r: LogReadResponse) => create(LogReadResponseSchema, { log: r.log.map((l) => ({ ...l, offset: undefined })) });
    expect(equals(LogReadResponseSchema, strip(after), strip(before))).toBe(true);
  }, 120_000); // 3,000 calls to twelve RPCs: about 40 s on two loaded cores
});

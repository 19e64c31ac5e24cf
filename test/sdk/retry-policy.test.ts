import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LogLineSchema, WriteRequestSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { createLogServiceClient } from "../../src/client/log-service-client.js";
import { decideFailure, retryDelay } from "../../src/sdk/retry-policy.js";
import { minimalLog, t0 } from "../helpers/fixtures.js";
import { freePort } from "../helpers/local-process.js";
import { useTestServer } from "../helpers/test-server.js";

describe("retryDelay", () => {
  it("waits within the upper half of the capped exponential step, and never less than RetryInfo", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.option(fc.integer({ min: 0, max: 120_000 }), { nil: undefined }),
        fc.integer({ min: 1, max: 1000 }),
        fc.integer({ min: 1000, max: 60_000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (failures, retryAfterMs, initialMs, maxMs, random) => {
          const delay = retryDelay(failures, retryAfterMs, { initialMs, maxMs }, () => random);
          const step = Math.min(maxMs, initialMs * 2 ** (failures - 1));
          expect(delay).toBeGreaterThanOrEqual(retryAfterMs ?? 0);
          if ((retryAfterMs ?? 0) <= step / 2) {
            expect(delay).toBeGreaterThanOrEqual(Math.floor(step / 2));
            expect(delay).toBeLessThanOrEqual(Math.ceil(step));
          } else {
            expect(delay).toBe(Math.max(retryAfterMs!, Math.round(step / 2 + (random * step) / 2)));
          }
        },
      ),
    );
  });

  it("spreads clients that failed together (jitter)", () => {
    const delays = new Set(Array.from({ length: 50 }, () => retryDelay(6, undefined, { initialMs: 100, maxMs: 10_000 })));
    expect(delays.size).toBeGreaterThan(10);
  });
});

describe("decideFailure, on the service's real failures", () => {
  let now = 0;
  const ts = useTestServer({ limits: { maxLineBytes: 100, rateLimit: 1 }, monotonicNow: () => now });
  const failureOf = async (call: Promise<unknown>) => call.then(() => expect.fail("the call succeeded"), (err: unknown) => decideFailure(err));

  it("refuses bad input and size limits (RESOURCE_EXHAUSTED without RetryInfo)", async () => {
    const invalid = await failureOf(ts.client.write(create(WriteRequestSchema, { log: [minimalLog({ method: "" })] })));
    expect([invalid.kind, invalid.error.code, invalid.retryAfterMs]).toEqual(["refused", Code.InvalidArgument, undefined]);
    const long = minimalLog({ line: [create(LogLineSchema, { time: t0, level: 1, logMessage: "x".repeat(101) })] });
    const tooLong = await failureOf(ts.client.write(create(WriteRequestSchema, { log: [long] })));
    expect([tooLong.kind, tooLong.error.code, tooLong.retryAfterMs]).toEqual(["refused", Code.ResourceExhausted, undefined]);
    expect(tooLong.error.rawMessage).toBe("log[0].line[0] message size in bytes is 101, over the limit max-line-bytes=100");
  });

  it("retries a rate limit after its RetryInfo, and an unreachable server", async () => {
    const { token } = await ts.backend.tokens.create({ name: "w", scopes: ["write:logs"] });
    const client = ts.connect({ token });
    await client.write(create(WriteRequestSchema, { log: [minimalLog()] }));
    const limited = await failureOf(client.write(create(WriteRequestSchema, { log: [minimalLog()] })));
    expect([limited.kind, limited.error.code, limited.retryAfterMs]).toEqual(["retry", Code.ResourceExhausted, 1000]);
    const down = createLogServiceClient({ server: `127.0.0.1:${await freePort()}` });
    const unreachable = await failureOf(down.write(create(WriteRequestSchema, { log: [minimalLog()] })));
    down.close();
    expect([unreachable.kind, unreachable.error.code]).toEqual(["retry", Code.Unavailable]);
    expect(decideFailure(new Error("socket hang up")).kind).toBe("retry");
    expect(decideFailure(new ConnectError("x", Code.Internal)).kind).toBe("retry");
  });
});

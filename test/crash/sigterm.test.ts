import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import type { ClientReadableStream, ServiceError } from "@grpc/grpc-js";
import { afterAll, describe, expect, it } from "vitest";
import {
  Health,
  HealthCheckRequestSchema,
  type HealthCheckResponse,
  HealthCheckResponse_ServingStatus as Serving,
} from "../../gen/health/v1/health_pb.js";
import { LogService, WriteRequestSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { systemClock } from "../../src/clock.js";
import { openDatabase } from "../../src/store/sqlite/open-database.js";
import { createSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { startChildServer } from "../../bench/harness/child-server.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { createTestClient, unaryCall } from "../helpers/test-client.js";

const dir = mkdtempSync(join(tmpdir(), "reqlog-sigterm-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("SIGTERM under load", () => {
  it("goes NOT_SERVING first, lets in-flight calls finish, keeps every acknowledged write, and exits in time", async () => {
    const db = join(dir, "term.db");
    const server = await startChildServer(["--listen", "127.0.0.1:0", "--db", db, "--shutdown-timeout", "3s"]);
    const client = createTestClient(LogService, server.address);
    const health = createTestClient(Health, server.address);
    const events: string[] = [];
    const watch = (health.watch as (r: unknown) => ClientReadableStream<HealthCheckResponse>)(create(HealthCheckRequestSchema, { service: "" }));
    watch.on("data", (r: HealthCheckResponse) => events.push(`health ${Serving[r.status]}`));
    watch.on("error", () => undefined);

    let termSent = false;
    const acked: string[] = [];
    const failedBeforeTerm: string[] = [];
    const writer = async (w: number) => {
      for (let i = 0; ; i++) {
        const id = `w${w}-${i}`;
        const startedBeforeTerm = !termSent;
        try {
          await unaryCall(client, "write", create(WriteRequestSchema, { log: [minimalLog({ requestId: rid(id), endTime: t0 + BigInt(i) })] }));
          acked.push(id);
        } catch (err) {
          if (startedBeforeTerm) failedBeforeTerm.push(`${id}: ${(err as ServiceError).details}`);
          return;
        }
      }
    };
    const writers = Array.from({ length: 6 }, (_, w) => writer(w));
    await new Promise((r) => setTimeout(r, 500));
    const termAt = Date.now();
    termSent = true;
    server.process.kill("SIGTERM");
    const exit = await server.exited;
    const exitedAfterMs = Date.now() - termAt;
    await Promise.all(writers);
    client.close();
    health.close();

    expect(exit).toEqual({ code: 0, signal: null });
    expect(exitedAfterMs).toBeLessThan(3000 + 2000);
    expect(events[0]).toBe("health SERVING");
    expect(events).toContain("health NOT_SERVING");
    // Calls already on their way when SIGTERM came were answered, not cut off.
    expect(failedBeforeTerm).toEqual([]);
    expect(acked.length).toBeGreaterThan(20);

    const database = openDatabase({ path: db });
    try {
      const stored = createSqliteStore(database, systemClock).getRequests("forge", acked.map(rid));
      expect(stored).toHaveLength(acked.length);
    } finally {
      database.close();
    }
  });
});

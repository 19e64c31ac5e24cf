import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { HealthCheckResponse_ServingStatus as Serving } from "../../gen/health/v1/health_pb.js";
import { openSqliteBackend } from "../../src/store/sqlite/sqlite-backend.js";
import { startChildServer } from "../../bench/harness/child-server.js";
import { createHealthClient } from "../../bench/harness/health-client.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { createTestClient, failureOf } from "../helpers/test-client.js";

const dir = mkdtempSync(join(tmpdir(), "reqlog-sigterm-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("SIGTERM under load", () => {
  it("goes NOT_SERVING first, lets in-flight calls finish, keeps every acknowledged write, and exits in time", async () => {
    const db = join(dir, "term.db");
    const server = await startChildServer(["--listen", "127.0.0.1:0", "--db", db, "--shutdown-timeout", "3s"]);
    const client = createTestClient({ server: server.address });
    const health = createHealthClient(server.address);
    const events: string[] = [];
    const watching = (async () => {
      for await (const r of health.watch({ service: "" })) events.push(`health ${Serving[r.status]}`);
    })().catch(() => undefined); // the stream breaks off when the server exits

    let termSent = false;
    const acked: string[] = [];
    const failedBeforeTerm: string[] = [];
    const writer = async (w: number) => {
      for (let i = 0; ; i++) {
        const id = `w${w}-${i}`;
        const startedBeforeTerm = !termSent;
        try {
          await client.write({ log: [minimalLog({ requestId: rid(id), endTime: t0 + BigInt(i) })] });
          acked.push(id);
        } catch (err) {
          if (startedBeforeTerm) failedBeforeTerm.push(`${id}: ${failureOf(err).details}`);
          return;
        }
      }
    };
    const writers = Array.from({ length: 6 }, (_, w) => writer(w));
    await new Promise((r) => setTimeout(r, 500));
    const termAt = Date.now();
    termSent = true;
    const exit = await server.stop();
    const exitedAfterMs = Date.now() - termAt;
    await Promise.all(writers);
    await watching;
    client.close();
    health.close();

    expect(exit).toEqual({ code: 0, signal: null });
    expect(exitedAfterMs).toBeLessThan(3000 + 2000);
    expect(events[0]).toBe("health SERVING");
    expect(events).toContain("health NOT_SERVING");
    // Calls already on their way when SIGTERM came were answered, not cut off.
    expect(failedBeforeTerm).toEqual([]);
    expect(acked.length).toBeGreaterThan(20);

    const backend = openSqliteBackend({ path: db, readWorkers: 0 });
    try {
      const stored = await backend.store.getRequests("forge", acked.map(rid), new AbortController().signal);
      expect(stored).toHaveLength(acked.length);
    } finally {
      await backend.close();
    }
  });
});

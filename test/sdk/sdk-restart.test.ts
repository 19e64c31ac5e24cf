import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { createReqlogClient } from "reqlog/client";
import { afterAll, describe, expect, it, vi } from "vitest";
import { LogLineSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { type ChildServer, startChildServer } from "../../bench/harness/child-server.js";
import { packageRoot } from "../../src/package-root.js";
import { freePort } from "../helpers/local-process.js";
import { idOf, readAll } from "../helpers/read-all.js";

const dir = mkdtempSync(join(tmpdir(), "reqlog-sdk-restart-"));
const children: ChildServer[] = [];
afterAll(async () => {
  for (const child of children) if (child.process.exitCode === null && child.process.signalCode === null) await child.stop();
  rmSync(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function serve(listen: string): Promise<ChildServer> {
  const child = await startChildServer(["--listen", listen, "--db", join(dir, "reqlog.db"), "--read-workers", "0", "--http-listen", "off"]);
  children.push(child);
  return child;
}

describe("the SDK across a reqlog restart", () => {
  it("keeps every acknowledged record and line when reqlog is killed -9 mid-stream, and resends the rest exactly once", async () => {
    const first = await serve("127.0.0.1:0");
    const errors: string[] = [];
    const reqlog = createReqlogClient({
      server: first.address,
      app: "forge",
      version: "v1",
      flushIntervalMs: 10,
      maxBatchRecords: 200,
      retry: { initialMs: 20, maxMs: 200 },
      onError: (e) => errors.push(e.message),
    });
    const total = 6000;
    const t0 = 1_795_000_000_000_000n;
    let sent = 0;
    const sendSome = (n: number) => {
      for (const end = Math.min(total, sent + n); sent < end; sent++) {
        const start = t0 + BigInt(sent) * 1000n;
        reqlog.send({
          requestId: `req-${sent}`,
          startTime: start,
          endTime: start + 800n,
          method: "GET",
          resource: `/api/v1/teams/${sent}`,
          status: 200,
          line: [0, 1, 2].map((j) => create(LogLineSchema, { time: start + BigInt(j), level: j + 1, logMessage: `line ${j} of req-${sent}` })),
        });
      }
    };

    // Stream until a good part is acknowledged, then kill the server while batches are in flight.
    while (reqlog.stats().acknowledged.records < 1500) {
      sendSome(40);
      await sleep(2);
    }
    sendSome(400);
    first.process.kill("SIGKILL");
    expect((await first.exited).signal).toBe("SIGKILL");
    const beforeRestart = reqlog.stats();
    expect(beforeRestart.buffered.records).toBeGreaterThan(0);

    // Down for a while: records keep coming and are held.
    for (let i = 0; i < 20; i++) {
      sendSome(40);
      await sleep(10);
    }
    await vi.waitFor(() => expect(reqlog.stats().failures).toBeGreaterThan(0), { timeout: 5000 });

    // Back on the same database and port.
    await serve(first.address);
    while (sent < total) {
      sendSome(100);
      await sleep(2);
    }
    await reqlog.flush({ timeoutMs: 30_000 });

    const stats = reqlog.stats();
    expect(stats.acknowledged.records).toBe(total);
    expect(stats.acknowledged.lines).toBe(3 * total);
    expect(stats.dropped).toEqual({ records: 0, lines: 0 });
    expect(stats.retried.batches).toBeGreaterThan(0);
    expect(errors.length).toBeGreaterThan(0);

    const stored = await readAll(reqlog.rpc, "forge");
    expect(stored).toHaveLength(total);
    expect(new Set(stored.map(idOf)).size).toBe(total);
    const wrong = stored.filter((l) => {
      const id = idOf(l);
      return l.line.length !== 3 || l.line.some((line, j) => line.logMessage !== `line ${j} of ${id}` || line.level !== j + 1);
    });
    expect(wrong.map(idOf)).toEqual([]);
    await reqlog.close();
  }, 90_000);

  it("keeps an app that awaits flush() alive until a retry to the next server is acknowledged, the first server down", async () => {
    const live = await serve("127.0.0.1:0");
    const dead = `127.0.0.1:${await freePort()}`;
    // The app, a process of its own: nothing but the flush it awaits keeps it running.
    const app = `
      import { createReqlogClient } from ${JSON.stringify(join(packageRoot(), "dist", "src", "sdk", "index.js"))};
      const reqlog = createReqlogClient({ server: [${JSON.stringify(dead)}, ${JSON.stringify(live.address)}], app: "await-flush", retry: { initialMs: 300, maxMs: 300 } });
      for (let i = 0; i < 10; i++) reqlog.send({ requestId: "af-" + i, startTime: 1795000000000000n, method: "GET", resource: "/api/v1/teams/" + i });
      await reqlog.flush();
      console.log("flushed", reqlog.stats().acknowledged.records, reqlog.stats().failures);
      await reqlog.close();`;
    const result = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = execFile(process.execPath, ["--input-type=module", "-e", app], { timeout: 60_000 }, (_err, stdout) =>
        resolve({ code: child.exitCode, stdout }),
      );
    });
    // It exited 13 (a top-level await never settled) when the retry's timer let the process go.
    expect(result).toEqual({ code: 0, stdout: "flushed 10 1\n" });
    const reqlog = createReqlogClient({ server: live.address, app: "await-flush" });
    expect((await readAll(reqlog.rpc, "await-flush")).map(idOf).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `af-${i}`).sort());
    await reqlog.close();
  }, 90_000);
});

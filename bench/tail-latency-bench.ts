/**
 * Write→Tail latency: a record written over gRPC, until a Tail follower
 * receives it, against the Write round trip alone as the baseline.
 *   npm run bench:tail -- [writes]     (default 2000)
 */
import { create } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import { RequestLogSchema, WriteRequestSchema } from "../gen/reqlog/v1/log_service_pb.js";
import { createLogServiceClient } from "../src/client/log-service-client.js";
import { Code } from "../src/reqlog-error.js";
import { startBenchServer } from "./harness/bench-server.js";
import { benchDbPath, benchStart, loadBackend } from "./load.js";

const writes = Number(process.argv[2] ?? 2000);

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

async function main() {
  // A store with some history, as a live one would have.
  const { backend } = await loadBackend(benchDbPath("tail"), 100_000);
  const server = await startBenchServer(backend);
  const writer = server.client;
  // The follower on a connection of its own, as another process's would be.
  const follower = createLogServiceClient({ server: server.address });
  const cancel = new AbortController();
  const arrived = new Map<string, number>();
  const waiters = new Map<string, () => void>();
  let subscribed!: () => void;
  const inPlace = new Promise<void>((resolve) => (subscribed = resolve));
  const following = (async () => {
    try {
      for await (const page of follower.tail({ appId: "bench-tail" }, { signal: cancel.signal, onHeader: () => subscribed() })) {
        const now = performance.now();
        for (const log of page.log) {
          const id = new TextDecoder().decode(log.requestId);
          arrived.set(id, now);
          waiters.get(id)?.();
        }
      }
    } catch (err) {
      if (ConnectError.from(err).code !== Code.CANCELLED) throw err; // the cancel at the end
    }
  })();
  await Promise.race([inPlace, following]);

  const roundTrips: number[] = [];
  const toTail: number[] = [];
  for (let i = 0; i < writes; i++) {
    const id = `t${i}`;
    const seen = new Promise<void>((resolve) => waiters.set(id, resolve));
    const sent = performance.now();
    await writer.write(create(WriteRequestSchema, {
      log: [create(RequestLogSchema, {
        appId: "bench-tail", versionId: "v1", requestId: new TextEncoder().encode(id), ip: "192.0.2.1", startTime: benchStart,
        endTime: benchStart + BigInt(i), latency: 0n, mcycles: 0n, method: "GET", resource: "/api/v1/teams/1",
        httpVersion: "HTTP/1.1", status: 200, responseSize: 0n, urlMapEntry: "", combined: "",
      })],
    }));
    roundTrips.push(performance.now() - sent);
    await seen;
    toTail.push(arrived.get(id)! - sent);
    waiters.delete(id);
  }
  cancel.abort();
  await following;
  follower.close();
  await server.close();
  const p = (xs: number[], q: number) => percentile(xs, q).toFixed(2);
  console.log(`Write→Tail over ${writes} writes (one at a time, loopback):`);
  console.log(`  Write round trip (baseline):    p50 ${p(roundTrips, 50)} ms   p99 ${p(roundTrips, 99)} ms`);
  console.log(`  written → received by a Tail:   p50 ${p(toTail, 50)} ms   p99 ${p(toTail, 99)} ms   (p99 ${(percentile(toTail, 99) / percentile(roundTrips, 99)).toFixed(2)}x the round trip)`);
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

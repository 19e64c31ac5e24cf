/**
 * Write→Tail latency: a record written over gRPC, until a Tail follower
 * receives it, against the Write round trip alone as the baseline.
 *   npm run bench:tail -- [writes]     (default 2000)
 */
import { create } from "@bufbuild/protobuf";
import { type ClientReadableStream, credentials, makeGenericClientConstructor, Metadata } from "@grpc/grpc-js";
import {
  LogReadRequestSchema,
  type LogReadResponse,
  LogService,
  RequestLogSchema,
  WriteRequestSchema,
} from "../gen/reqlog/v1/log_service_pb.js";
import { createCliClient } from "../src/cli/client.js";
import { clientDefinition } from "../src/grpc/service-definition.js";
import { startServer } from "../src/grpc/server.js";
import { defaultLimits } from "../src/limits.js";
import { createLogger } from "../src/logger.js";
import { benchDbPath, benchStart, loadStore } from "./load.js";

const writes = Number(process.argv[2] ?? 2000);

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

async function main() {
  // A store with some history, as a live one would have.
  const { store, auth } = await loadStore(benchDbPath("tail"), 100_000);
  const server = await startServer({ store, limits: defaultLimits, auth }, { listen: "127.0.0.1:0", shutdownTimeoutMs: 1000, logger: createLogger("silent") });
  const writer = createCliClient(LogService, server.address);
  const Ctor = makeGenericClientConstructor(clientDefinition(LogService), LogService.typeName);
  const follower = new Ctor(server.address, credentials.createInsecure()) as unknown as Record<string, (r: unknown, m: Metadata) => ClientReadableStream<LogReadResponse>>;
  const tail = follower.tail!(create(LogReadRequestSchema, { appId: "bench-tail" }), new Metadata());
  await new Promise((resolve) => tail.once("metadata", resolve));
  tail.on("error", () => undefined); // the cancel at the end
  const arrived = new Map<string, number>();
  const waiters = new Map<string, () => void>();
  tail.on("data", (page: LogReadResponse) => {
    const now = performance.now();
    for (const log of page.log) {
      const id = new TextDecoder().decode(log.requestId);
      arrived.set(id, now);
      waiters.get(id)?.();
    }
  });

  const roundTrips: number[] = [];
  const toTail: number[] = [];
  for (let i = 0; i < writes; i++) {
    const id = `t${i}`;
    const seen = new Promise<void>((resolve) => waiters.set(id, resolve));
    const sent = performance.now();
    await writer.unary("write", create(WriteRequestSchema, {
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
  tail.cancel();
  writer.close();
  await server.shutdown();
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

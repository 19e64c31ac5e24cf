/**
 * A Tail on one reqlog server seeing the writes of another: two `reqlog
 * serve` processes on one ClickHouse database, a Tail open on server B, and
 * writes of one record each, one at a time at a steady pace, alternately
 * through server A (the other server) and server B (the Tail's own). For each
 * record: the time from Write's acknowledgement to the Tail receiving it
 * (0 when it came before the ack), p50, p99 and the worst, per side; and
 * records the Tail gave twice or never (the goal: each once, p99 ≤ 1 s
 * across servers). Optionally, other writes through both servers at the
 * same time (--load RECORDS/S at most, in calls of 100, one at a time).
 *   npm run bench:clickhouse-tail-servers -- [writes] [--pace MS] [--load RECORDS/S]
 *   (default 1,000 writes, one every 20 ms, no background load)
 */
import { loadavg } from "node:os";
import { create } from "@bufbuild/protobuf";
import { RequestLogSchema, WriteRequestSchema } from "../gen/reqlog/v1/log_service_pb.js";
import { createLogServiceClient } from "../src/client/log-service-client.js";
import { startClickHouse } from "../test/helpers/clickhouse-server.js";
import { type ReqlogChild, serveReqlog, stopReqlog } from "./harness/peer-compare.js";
import { followTail } from "./harness/tail-follower.js";
import { benchStart } from "./load.js";

const args = process.argv.slice(2);
const flag = (name: string, otherwise: number) => {
  const at = args.indexOf(name);
  return at >= 0 ? Number(args[at + 1]) : otherwise;
};
const writes = Number(args.find((a, i) => !a.startsWith("--") && !args[i - 1]?.startsWith("--")) ?? 1000);
const paceMs = flag("--pace", 20);
const loadPerSecond = flag("--load", 0);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] ?? NaN;
const load = () => loadavg().map((l) => l.toFixed(2)).join(" ");

function record(app: string, id: string, i: number) {
  return create(RequestLogSchema, {
    appId: app, versionId: "v1", requestId: new TextEncoder().encode(id), ip: "192.0.2.1", startTime: benchStart + BigInt(i) * 1000n,
    endTime: benchStart + BigInt(i) * 1000n + 800n, latency: 800n, mcycles: 0n, method: "GET", resource: "/api/v1/teams/1",
    httpVersion: "HTTP/1.1", status: 200, responseSize: 0n, urlMapEntry: "", combined: "",
  });
}

/**
 * Background writes of another app through both servers, at most `perSecond` records a second in calls of 100,
 * one call at a time, until `stop`; resolves with the records written and the rate reached.
 */
async function background(servers: readonly ReqlogChild[], perSecond: number, stop: AbortSignal): Promise<{ written: number; rate: number }> {
  if (perSecond <= 0) return { written: 0, rate: 0 };
  const clients = servers.map((s) => createLogServiceClient({ server: s.address }));
  let written = 0;
  const started = performance.now();
  try {
    while (!stop.aborted) {
      const due = started + ((written + 100) / perSecond) * 1000;
      if (performance.now() < due) await sleep(due - performance.now());
      const batch = Array.from({ length: 100 }, (_, k) => record("bench-load", `l${written + k}`, written + k));
      await clients[(written / 100) % clients.length]!.write(create(WriteRequestSchema, { log: batch }));
      written += 100;
    }
  } finally {
    for (const c of clients) c.close();
  }
  return { written, rate: written / ((performance.now() - started) / 1000) };
}

async function main() {
  const ch = await startClickHouse({ name: "reqlog-bench-tail-servers-" });
  const store = ["--store", "clickhouse", "--clickhouse-url", ch.url, "--clickhouse-database", "reqlog_tail_servers"];
  const [a, b] = await Promise.all([serveReqlog("tail-servers-a", store), serveReqlog("tail-servers-b", store)]);
  const loadBefore = load();
  console.log(`ClickHouse ${ch.version}; two reqlog servers on one database; ${writes.toLocaleString()} writes of one record, ` +
    `one every ${paceMs} ms, alternately through A and B; a Tail on B` +
    (loadPerSecond > 0 ? `; other writes through both, up to ${loadPerSecond.toLocaleString()} records/s` : ""));

  const arrivals = new Map<string, number[]>();
  const tail = await followTail(b!.address, "bench-tail", (id, at) => arrivals.set(id, [...(arrivals.get(id) ?? []), at]));

  const stopLoad = new AbortController();
  const loading = background([a!, b!], loadPerSecond, stopLoad.signal);
  const acks = new Map<string, { at: number; through: "A" | "B"; roundTrip: number }>();
  const started = performance.now();
  for (let i = 0; i < writes; i++) {
    const due = started + i * paceMs;
    if (performance.now() < due) await sleep(due - performance.now());
    const through = i % 2 === 0 ? "A" : "B";
    const id = `t${i}`;
    const sent = performance.now();
    await (through === "A" ? a! : b!).client.write(create(WriteRequestSchema, { log: [record("bench-tail", id, i)] }));
    const at = performance.now();
    acks.set(id, { at, through, roundTrip: at - sent });
  }
  stopLoad.abort();
  const loaded = await loading;
  // Everything the Tail will give: wait until each record came, or 30 s after the last ack.
  const deadline = performance.now() + 30_000;
  while (arrivals.size < writes && performance.now() < deadline) await sleep(50);
  const loadAfter = load();
  await tail.stop();

  const delivery = { A: [] as number[], B: [] as number[] };
  const roundTrips: number[] = [];
  let twice = 0;
  let beforeAck = 0;
  for (const [id, ack] of acks) {
    roundTrips.push(ack.roundTrip);
    const came = arrivals.get(id);
    if (!came) continue;
    if (came.length > 1) twice++;
    if (came[0]! < ack.at) beforeAck++;
    delivery[ack.through].push(Math.max(0, came[0]! - ack.at));
  }
  const missing = writes - [...acks.keys()].filter((id) => arrivals.has(id)).length;
  const ms = (x: number) => `${x.toFixed(0)} ms`;
  const line = (xs: number[]) => `p50 ${ms(percentile(xs, 50))}   p99 ${ms(percentile(xs, 99))}   max ${ms(Math.max(...xs))}`;
  console.log(`\nWrite ack → received by a Tail on server B (${new Date().toISOString()}; load average ${loadBefore} before, ${loadAfter} after):`);
  console.log(`  written through A (another server):  ${line(delivery.A)}   (${delivery.A.length} records)`);
  console.log(`  written through B (the Tail's own):  ${line(delivery.B)}   (${delivery.B.length} records)`);
  console.log(`  Write round trip:                    p50 ${percentile(roundTrips, 50).toFixed(1)} ms   p99 ${percentile(roundTrips, 99).toFixed(1)} ms`);
  console.log(`  received twice: ${twice}; never received: ${missing}; received before the ack (counted as 0): ${beforeAck}` +
    (loadPerSecond > 0 ? `; other writes: ${loaded.written.toLocaleString()} records, ${Math.round(loaded.rate).toLocaleString()}/s` : ""));

  await Promise.all([stopReqlog(a!), stopReqlog(b!)]);
  await ch.stop();
  process.exit(missing === 0 && twice === 0 ? 0 : 1);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

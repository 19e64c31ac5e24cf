/**
 * reqlog on ClickHouse with one server and with two on one database: the
 * bench's seeded forge requests written at 1,000 a call, 4 calls in flight
 * (with two servers, 2 to each), beside raw inserts into a MergeTree table
 * of the same rows, the three sides alternating by 100,000 records
 * (writeEach). Prints each side's records/s, the ratios, and each server's
 * own CPU per stored record (its process's user + system time, from
 * /proc, over the records it stored; start-up left out).
 *   npm run bench:clickhouse-servers -- [requests]   (default 200,000)
 */
import { readFileSync } from "node:fs";
import { startClickHouse } from "../test/helpers/clickhouse-server.js";
import {
  clickhouseTable,
  clickhouseTarget,
  type ReqlogChild,
  reqlogTarget,
  serveReqlog,
  stopReqlog,
  type WriteTarget,
  writeEach,
} from "./harness/peer-compare.js";

const n = Number(process.argv[2] ?? 200_000);

/** A process's CPU time so far (user + system), in µs. */
function cpuUs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  // utime and stime are fields 14 and 15 of stat (counted from 1), here 12 and 13 after "pid (comm) ".
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100;
}

/** Several targets as one: calls spread over them in turn (4 in flight over two servers: 2 each). */
function spread<T>(targets: WriteTarget<T>[]): WriteTarget<T> {
  let turn = 0;
  return {
    prepare: (batch) => targets[0]!.prepare(batch),
    write: (prepared) => targets[turn++ % targets.length]!.write(prepared),
    close: () => targets.forEach((t) => t.close?.()),
  };
}

async function main() {
  const ch = await startClickHouse({ name: "reqlog-bench-servers-" });
  console.log(`ClickHouse ${ch.version}; ${n.toLocaleString()} requests at 1,000 a call, 4 in flight`);
  const store = (database: string) => ["--store", "clickhouse", "--clickhouse-url", ch.url, "--clickhouse-database", database];
  const one = await serveReqlog("servers-one", store("reqlog_one"));
  const two: ReqlogChild[] = await Promise.all([serveReqlog("servers-two-a", store("reqlog_two")), serveReqlog("servers-two-b", store("reqlog_two"))]);
  await ch.client.command({ query: clickhouseTable("raw_requests") });
  const servers = [one, ...two];
  const before = servers.map((s) => cpuUs(s.process.pid!));

  const [oneRate, twoRate, rawRate] = await writeEach(
    [reqlogTarget(one.address), spread(two.map((s) => reqlogTarget(s.address))), clickhouseTarget(ch.client, "raw_requests")] as WriteTarget<unknown>[],
    n, 1000, 4, 42,
  );
  const cpu = servers.map((s, i) => cpuUs(s.process.pid!) - before[i]!);
  const perRecord = (us: number) => (us / n).toFixed(1);
  console.log(`\nWrite, 1,000 a call, 4 in flight (${new Date().toISOString()}):`);
  console.log(`  one server        ${Math.round(oneRate!).toLocaleString()} records/s  (${(oneRate! / rawRate!).toFixed(2)}× raw)`);
  console.log(`  two servers       ${Math.round(twoRate!).toLocaleString()} records/s  (${(twoRate! / rawRate!).toFixed(2)}× raw, ${(twoRate! / oneRate!).toFixed(2)}× one server)`);
  console.log(`  raw ClickHouse    ${Math.round(rawRate!).toLocaleString()} records/s`);
  console.log(`reqlog's CPU per stored record: one server ${perRecord(cpu[0]!)} µs; two servers ${perRecord(cpu[1]! + cpu[2]!)} µs (${perRecord(cpu[1]!)} + ${perRecord(cpu[2]!)})`);

  for (const s of servers) await stopReqlog(s);
  await ch.stop();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

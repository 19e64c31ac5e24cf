/**
 * reqlog on ClickHouse against raw ClickHouse and against reqlog on SQLite,
 * in one run on this machine: the same seeded forge requests written by
 * each (reqlog's Write RPC to `reqlog serve --store clickhouse` and to
 * `reqlog serve` on SQLite, and @clickhouse/client inserts into a plain
 * MergeTree table), same batch sizes and calls in flight, sides alternating;
 * then the same questions of all three: first page and page 1000 of a
 * one-day window, a selective regex, hourly usage, and disk per request.
 *   npm run bench:clickhouse-backend -- [requests]     (default 1000000)
 * Both reqlog servers run as child processes, as ClickHouse does.
 */
import { statSync } from "node:fs";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import Database from "better-sqlite3";
import { type LogReadRequestSchema, LogUsageRequestSchema } from "../gen/reqlog/v1/log_service_pb.js";
import type { LogServiceClient } from "../src/client/log-service-client.js";
import { startClickHouse } from "../test/helpers/clickhouse-server.js";
import {
  alternating,
  chRows,
  chString,
  clickhouseMerged,
  clickhouseSettled,
  clickhouseTable,
  clickhouseTarget,
  type Figure,
  printTable,
  recordColumns,
  reqlogOffsetAt,
  reqlogTarget,
  serveReqlog,
  stopReqlog,
  type WriteTarget,
  walkTo,
  writeEach,
} from "./harness/peer-compare.js";
import { benchStart } from "./load.js";
import { selectivePattern, trafficApps, unindexablePattern } from "./search-patterns.js";

const n = Number(process.argv[2] ?? 1_000_000);
const day = 86_400_000_000n;
const apps = trafficApps;
const sides = ["reqlog on ClickHouse", "raw ClickHouse", "reqlog on SQLite"];

async function main() {
  const ch = await startClickHouse({ name: "reqlog-bench-chbackend-", keep: false });
  console.log(`ClickHouse ${ch.version} on loopback (data in ${ch.dataPath}); ${n.toLocaleString()} requests`);
  const onClickHouse = (database: string) => ["--store", "clickhouse", "--clickhouse-url", ch.url, "--clickhouse-database", database];
  const figures: Figure[] = [];

  const oursCh = await serveReqlog("chbackend-main", onClickHouse("reqlog"));
  const oursSqlite = await serveReqlog("chbackend-sqlite");
  await ch.client.command({ query: clickhouseTable("raw_requests") });

  // Write: the main data set at 1,000 a call, then 100 a call into side stores.
  for (const [batchSize, total, seed] of [[1000, n, 42], [100, Math.min(n, 200_000), 43]] as const) {
    const concurrency = 4;
    const main = seed === 42;
    const ch1 = main ? oursCh : await serveReqlog(`chbackend-${batchSize}`, onClickHouse(`reqlog_batches_of_${batchSize}`));
    const sq1 = main ? oursSqlite : await serveReqlog(`chbackend-sqlite-${batchSize}`);
    const raw = main ? "raw_requests" : `raw_batches_of_${batchSize}`;
    if (!main) await ch.client.command({ query: clickhouseTable(raw) });
    const label = `Write, ${batchSize} records per call, ${concurrency} in flight (${total.toLocaleString()} records)`;
    console.log(`${label}: the three in turn …`);
    const rates = await writeEach(
      [reqlogTarget(ch1.address), clickhouseTarget(ch.client, raw), reqlogTarget(sq1.address)] as WriteTarget<unknown>[],
      total, batchSize, concurrency, seed,
    );
    if (!main) {
      await stopReqlog(ch1);
      await stopReqlog(sq1);
    }
    console.log(`  ${rates.map((r, i) => `${sides[i]} ${Math.round(r).toLocaleString()}/s`).join(", ")}`);
    figures.push({
      label, values: rates, unit: "records/s",
      ...(batchSize === 1000 && { goal: "≥ 0.8× raw ClickHouse", met: rates[0]! >= 0.8 * rates[1]! }),
    });
  }
  console.log("waiting for ClickHouse's merges to settle …");
  await clickhouseSettled(ch.client);

  // Reads of the main data set: the newest day of app "forge", 100 a page.
  const reader = (client: LogServiceClient) => (init: MessageInitShape<typeof LogReadRequestSchema>) =>
    client.read({ appId: "forge", ...init });
  const readCh = reader(oursCh.client);
  const readSqlite = reader(oursSqlite.client);
  const newest = (await readSqlite({ count: 1n })).log[0]!.endTime;
  const from = n >= 1_000_000 ? newest - day : benchStart;
  const window = { startTime: from, endTime: newest + 1n, count: 100n };
  const where = `app_id = 'forge' AND sort_time >= ${from} AND sort_time < ${newest + 1n}`;
  type Last = { sort_time: string; request_id: string };
  const rawPage = (after?: Last, count = 100) =>
    chRows<Last>(
      ch.client,
      `SELECT ${recordColumns}, sort_time FROM raw_requests WHERE ${where}` +
        (after ? ` AND (sort_time < ${after.sort_time} OR (sort_time = ${after.sort_time} AND request_id < ${chString(after.request_id)}))` : "") +
        ` ORDER BY sort_time DESC, request_id DESC LIMIT ${count}`,
    );
  console.log("first pages …");
  const first = await alternating(4, 5, [() => readCh(window), () => rawPage(), () => readSqlite(window)]);
  figures.push({
    label: "Read first page (100, one-day window)", values: first, unit: "ms", goal: "≤ 50 ms at 10M",
    met: n >= 10_000_000 ? first[0]! <= 50 : undefined,
  });

  // Page 1000 by keyset on every side (smaller runs have fewer pages: their deepest is compared).
  const depth = Math.min(1000, Math.floor((n * 0.8) / 100));
  console.log(`paging to page ${depth} …`);
  const chOffset = await reqlogOffsetAt(readCh, window, (depth - 1) * 100);
  const sqliteOffset = await reqlogOffsetAt(readSqlite, window, (depth - 1) * 100);
  const last = await walkTo<Last>((depth - 1) * 100, async (count, after) => (await rawPage(after, count)).at(-1));
  const deep = await alternating(4, 5, [
    () => readCh({ ...window, offset: { requestId: chOffset } }),
    () => rawPage(last),
    () => readSqlite({ ...window, offset: { requestId: sqliteOffset } }),
  ]);
  figures.push({
    label: `Read page ${depth} (keyset on all)`, values: deep, unit: "ms",
    goal: `≤ 1.2× its first page: reqlog on ClickHouse ${(deep[0]! / first[0]!).toFixed(2)}×`, met: deep[0]! <= 1.2 * first[0]!,
  });

  // Regexes over every stored request, all three apps (the first 1,000 of each, newest first); every side
  // must find the same requests.
  async function regex(pattern: string, label: string, goal: string, met: (ours: number, raw: number) => boolean) {
    console.log(`${label} …`);
    const matches = [0, 0, 0];
    const oursRegex = (read: typeof readCh, side: number) => async () => {
      matches[side] = 0;
      for (const appId of apps) {
        matches[side]! += (await read({ appId, count: 1000n, includeIncomplete: true, startTime: benchStart, combinedLogRegex: pattern })).log.length;
      }
    };
    const rawRegex = async () => {
      matches[1] = 0;
      for (const appId of apps) {
        matches[1] += (await chRows(ch.client,
          `SELECT ${recordColumns} FROM raw_requests WHERE app_id = ${chString(appId)} AND match(combined, ${chString(pattern)})
           ORDER BY sort_time DESC, request_id DESC LIMIT 1000`)).length;
      }
    };
    const times = await alternating(3, 1, [oursRegex(readCh, 0), rawRegex, oursRegex(readSqlite, 2)]);
    if (new Set(matches).size !== 1) throw new Error(`${pattern} matched ${matches.join(", ")} requests (${sides.join(", ")})`);
    figures.push({ label: `${label} (${matches[0]} matches)`, values: times, unit: "ms", goal, met: met(times[0]!, times[1]!) });
    return times;
  }
  const selective = await regex(selectivePattern, `Selective regex over all ${n.toLocaleString()}`, "≤ 0.2× raw match()", (ours, raw) => ours <= 0.2 * raw);
  console.log(`  (the selective regex: ${selective[0]!.toFixed(1)} ms; at 10M its goal is ≤ 2× its own 1M time)`);
  await regex(unindexablePattern, "Regex no index narrows (5xx), first 1,000 of each app", "≤ 1.5× raw match()", (ours, raw) => ours <= 1.5 * raw);

  // Usage: hourly per version over the data's span, app "forge".
  const startS = Number(benchStart / 1_000_000n);
  const endS = Number(newest / 1_000_000n) + 3600;
  const usage = create(LogUsageRequestSchema, { appId: "forge", startTime: startS, endTime: endS });
  const buckets = [0, 0, 0];
  const usageTimes = await alternating(4, 10, [
    async () => (buckets[0] = (await oursCh.client.usage(usage)).usage.length),
    async () =>
      (buckets[1] = (await chRows(ch.client,
        `SELECT intDiv(sort_time, 3600000000) AS hour, version_id, count() AS requests, sum(bytes) AS bytes FROM raw_requests
         WHERE app_id = 'forge' AND sort_time >= ${startS}000000 AND sort_time < ${endS}000000 GROUP BY hour, version_id`)).length),
    async () => (buckets[2] = (await oursSqlite.client.usage(usage)).usage.length),
  ]);
  if (new Set(buckets).size !== 1) console.log(`  (usage buckets differ: ${buckets.join(", ")})`);
  figures.push({ label: "Usage, hourly per version over the span", values: usageTimes, unit: "ms" });

  // Disk: ClickHouse's tables merged into as few parts as they go (only active parts count);
  // reqlog's SQLite file after a checkpoint.
  await stopReqlog(oursCh);
  await stopReqlog(oursSqlite);
  await clickhouseMerged(ch.client, ["default", "reqlog"]);
  const parts = await chRows<{ database: string; table: string; bytes: string }>(ch.client,
    `SELECT database, table, sum(bytes_on_disk) AS bytes FROM system.parts WHERE active AND database IN ('default', 'reqlog')
     AND (database = 'reqlog' OR table = 'raw_requests') GROUP BY database, table ORDER BY database, bytes DESC`);
  console.log("\nClickHouse bytes per request, by table:");
  for (const p of parts) console.log(`  ${p.database}.${p.table}: ${(Number(p.bytes) / n).toFixed(1)} B`);
  // What each column of requests and positions costs (compressed, marks left out): where a column diet saves.
  const columns = await chRows<{ table: string; name: string; bytes: string }>(ch.client,
    `SELECT table, name, data_compressed_bytes AS bytes FROM system.columns
     WHERE database = 'reqlog' AND table IN ('requests', 'positions') ORDER BY table, data_compressed_bytes DESC`);
  console.log("\nClickHouse bytes per request, by column (compressed):");
  for (const c of columns) console.log(`  ${c.table}.${c.name}: ${(Number(c.bytes) / n).toFixed(2)} B`);
  const chBytes = parts.filter((p) => p.database === "reqlog").reduce((s, p) => s + Number(p.bytes), 0) / n;
  const rawBytes = parts.filter((p) => p.table === "raw_requests").reduce((s, p) => s + Number(p.bytes), 0) / n;
  const db = new Database(oursSqlite.dbPath);
  db.pragma("wal_checkpoint(TRUNCATE)");
  db.close();
  const sqliteBytes = statSync(oursSqlite.dbPath).size / n;
  figures.push({ label: "Disk per request (records, app lines, rollups, search index)", values: [chBytes, rawBytes, sqliteBytes], unit: "B", goal: "≤ 0.6× raw ClickHouse", met: chBytes <= 0.6 * rawBytes });
  await ch.stop();

  printTable(figures, sides);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

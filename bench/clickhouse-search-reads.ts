/**
 * What a regex Read on ClickHouse reads, statement by statement: the seeded
 * forge requests written once (reqlog's Write to `reqlog serve --store
 * clickhouse`, and the same rows into a raw MergeTree table), then the
 * selective regex, one of two parts (twoPartPattern) and the regex no index
 * narrows asked of this build and,
 * when given, of another build serving the same database (sides
 * alternating), against raw ClickHouse's `match()` over the same rows. For
 * one Read of each pattern on each side it prints every statement from
 * `system.query_log` (rows and bytes read, duration), so that what
 * dominates shows.
 *   node dist/bench/clickhouse-search-reads.js [requests] [other checkout, built]     (default 300000)
 * With REQLOG_PROBE_KEEP=1 its ClickHouse stays up (until SIGTERM) and a later run given
 * REQLOG_PROBE_URL=<its url> asks it again without writing. REQLOG_PROBE_PATTERNS=selective,
 * =two or =5xx asks that pattern only; REQLOG_PROBE_ROUNDS=N times N rounds of each side (default 3).
 */
import { join, resolve } from "node:path";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { LogReadRequestSchema } from "../gen/reqlog/v1/log_service_pb.js";
import { ClickHouseLogLevel, createClient } from "@clickhouse/client";
import { startClickHouse } from "../test/helpers/clickhouse-server.js";
import {
  alternating,
  chRows,
  chString,
  clickhouseSettled,
  clickhouseTable,
  clickhouseTarget,
  recordColumns,
  reqlogTarget,
  serveReqlog,
  stopReqlog,
  type WriteTarget,
  writeEach,
} from "./harness/peer-compare.js";
import { benchStart } from "./load.js";
import { selectivePattern, trafficApps, twoPartPattern, unindexablePattern } from "./search-patterns.js";

const n = Number(process.argv[2] ?? 300_000);
const other = process.argv[3];

interface Logged {
  query: string;
  read_rows: string;
  read_bytes: string;
  query_duration_ms: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main() {
  // REQLOG_PROBE_URL: a ClickHouse this script started and kept (REQLOG_PROBE_KEEP=1), its data written.
  const kept = process.env.REQLOG_PROBE_URL;
  const ch = kept ? undefined : await startClickHouse({ name: "reqlog-bench-chsearch-", logQueries: true });
  const url = kept ?? ch!.url;
  const client = ch?.client ?? createClient({ url, log: { level: ClickHouseLogLevel.OFF }, request_timeout: 600_000 });
  const flags = ["--store", "clickhouse", "--clickhouse-url", url, "--clickhouse-database", "reqlog"];
  const ours = await serveReqlog("chsearch-this", flags);
  if (ch) {
    console.log(`ClickHouse ${ch.version} at ${url}; ${n.toLocaleString()} requests`);
    await client.command({ query: clickhouseTable("raw_requests") });
    console.log("writing …");
    await writeEach([reqlogTarget(ours.address), clickhouseTarget(client, "raw_requests")] as WriteTarget<unknown>[], n, 1000, 4, 42);
    await clickhouseSettled(client);
  }
  const servers = [ours, ...(other ? [await serveReqlog("chsearch-other", flags, join(resolve(other), "dist", "src", "main.js"))] : [])];
  const sides = ["this build", ...(other ? [`build at ${resolve(other)}`] : []), "raw match()"];

  const read = (i: number, init: MessageInitShape<typeof LogReadRequestSchema>) => servers[i]!.client.read(init);
  const regexRead = (i: number, pattern: string, appId: string) =>
    read(i, { appId, count: 1000n, includeIncomplete: true, startTime: benchStart, combinedLogRegex: pattern });
  const rawRegex = (pattern: string, appId: string) =>
    chRows(client, `SELECT ${recordColumns} FROM raw_requests WHERE app_id = ${chString(appId)} AND match(combined, ${chString(pattern)})
                       ORDER BY sort_time DESC, request_id DESC LIMIT 1000`);

  const only = process.env.REQLOG_PROBE_PATTERNS;
  const patterns = [["selective", selectivePattern], ["two parts", twoPartPattern], ["no index narrows (5xx)", unindexablePattern]] as const;
  for (const [label, pattern] of patterns.filter(([l]) => only === undefined || l.includes(only))) {
    // One Read of app forge on each side, its statements from the query log (a second apart, by event time).
    for (let i = 0; i < servers.length; i++) {
      await regexRead(i, pattern, "forge"); // warm
      await client.command({ query: "SYSTEM FLUSH LOGS" });
      const [{ t }] = await chRows<{ t: string }>(client, "SELECT toString(now()) AS t");
      await sleep(1100);
      const found = (await regexRead(i, pattern, "forge")).log.length;
      await sleep(1100);
      await client.command({ query: "SYSTEM FLUSH LOGS" });
      const logged = await chRows<Logged>(
        client,
        `SELECT query, read_rows, read_bytes, query_duration_ms FROM system.query_log
         WHERE type = 2 AND event_time > toDateTime(${chString(t!)}) AND event_time <= now() - 1
           AND query NOT LIKE '%system.%' AND query NOT LIKE '%servers%' AND query NOT LIKE '%request_keys%'
         ORDER BY event_time, query_start_time`,
      );
      console.log(`\n${label}, ${sides[i]}: ${found} matches in forge; statements:`);
      let rows = 0;
      for (const q of logged) {
        rows += Number(q.read_rows);
        console.log(`  ${q.query_duration_ms.padStart(5)} ms ${q.read_rows.padStart(9)} rows ${(Number(q.read_bytes) / 1e6).toFixed(1).padStart(7)} MB  ${q.query.replace(/\s+/g, " ").slice(0, 300)}`);
      }
      console.log(`  (${logged.length} statements, ${rows.toLocaleString()} rows)`);
    }
    const counts = sides.map(() => 0);
    // Each build's answers, in order (ids, lines and whether a next page follows): the builds must agree exactly.
    const answers = servers.map(() => "");
    const times = await alternating(Number(process.env.REQLOG_PROBE_ROUNDS ?? 3), 3, [
      ...servers.map((_, i) => async () => {
        counts[i] = 0;
        const seen: string[] = [];
        for (const appId of trafficApps) {
          const page = await regexRead(i, pattern, appId);
          counts[i]! += page.log.length;
          seen.push(...page.log.map((l) => `${Buffer.from(l.requestId).toString("hex")} ${l.combined} ${l.latency} ${l.host}`), page.offset ? "more" : "end");
        }
        answers[i] = seen.join(",");
      }),
      async () => {
        counts[servers.length] = 0;
        for (const appId of trafficApps) counts[servers.length]! += (await rawRegex(pattern, appId)).length;
      },
    ]);
    if (new Set(counts).size !== 1) throw new Error(`${pattern}: ${counts.join(", ")} matches (${sides.join(", ")})`);
    if (new Set(answers).size !== 1) throw new Error(`${pattern}: the builds' answers differ`);
    const raw = times.at(-1)!;
    console.log(`\n${label} over every app (${counts[0]} matches): ${times.map((t, i) => `${sides[i]} ${t.toFixed(1)} ms (${(t / raw).toFixed(2)}× raw)`).join(", ")}`);
  }
  for (const s of servers) await stopReqlog(s);
  if (process.env.REQLOG_PROBE_KEEP === "1" && ch) {
    console.log(`kept: REQLOG_PROBE_URL=${url} (stop with SIGTERM to this process)`);
    await new Promise<void>((done) => process.once("SIGTERM", () => done()));
  }
  await ch?.stop();
  if (!ch) await client.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

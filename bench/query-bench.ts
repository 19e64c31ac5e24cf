/**
 * Queries (docs/query.md) in one run, as a user asks them (the Query RPC of
 * `reqlog serve` in a child process), beside peers answering the same
 * question over the same rows:
 *
 * 1. 10M forge requests over 30 days (SQLite): a question the Stats rollups
 *    answer (route × status class over the 30 days; goal ≤ 20 ms), and count()
 *    with a selective phrase, through the search index (goal ≤ 50 ms).
 * 2. 1M requests over one day: a filtered `stats by (ip)` on SQLite ÷ DuckDB's
 *    SQL on the same rows (goal ≤ 2×); on reqlog on ClickHouse ÷ raw
 *    ClickHouse SQL (goal ≤ 1.3×). Two filters: a phrase (the search index
 *    on SQLite) and a status range (a scan of the day).
 *
 *   npm run bench:query -- [--requests 10000000] [--day 1000000] [--db FILE] [--day-db FILE] [--runs 15] [--no-clickhouse]
 *
 * --db / --day-db keep the loaded SQLite stores in these files and reuse them
 * on later runs (loading 10M requests takes a long while on a shared machine).
 */
import { existsSync } from "node:fs";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createLogServiceClient, type LogServiceClient } from "../src/client/log-service-client.js";
import { type QueryAnswer, readQueryAnswer } from "../src/client/query-answer.js";
import type { RequestLog } from "../gen/reqlog/v1/log_service_pb.js";
import { startClickHouse } from "../test/helpers/clickhouse-server.js";
import { openDuckDbPeer } from "./harness/duckdb-peer.js";
import { startChildServer } from "./harness/child-server.js";
import {
  alternating,
  chRows,
  clickhouseMerged,
  clickhouseSettled,
  clickhouseTable,
  clickhouseTarget,
  type Figure,
  printTable,
  reqlogTarget,
  serveReqlog,
  stopReqlog,
  type WriteTarget,
  writeEach,
} from "./harness/peer-compare.js";
import { benchStart, loadBackend, median, trafficRecords } from "./load.js";

const { values: args } = parseArgs({
  options: {
    requests: { type: "string", default: "10000000" },
    day: { type: "string", default: "1000000" },
    db: { type: "string" },
    "day-db": { type: "string" },
    runs: { type: "string", default: "15" },
    "no-clickhouse": { type: "boolean", default: false },
  },
});
const big = Number(args.requests);
const dayN = Number(args.day);
const runs = Number(args.runs);
const dayUs = 86_400_000_000;
const figures: Figure[] = [];

/** A fresh path, or the one given (reused when it exists). */
const storePath = (given: string | undefined, name: string) => given ?? join(mkdtempSync(join(tmpdir(), `reqlog-bench-${name}-`)), "bench.db");

/** Moves a record's times by `shiftUs` (the 30 days must end before now: writes refuse times a day ahead). */
function shifted(shiftUs: bigint) {
  return (log: RequestLog) => {
    log.startTime += shiftUs;
    if (log.endTime > 0n) log.endTime += shiftUs;
    for (const line of log.line) line.time += shiftUs;
    return log;
  };
}

async function loaded(path: string, n: number, gapUsec: number, what: string, shiftUs = 0n): Promise<void> {
  if (existsSync(path)) {
    console.log(`reusing ${what} in ${path}`);
    return;
  }
  console.log(`loading ${n.toLocaleString()} requests (${what}) into ${path} …`);
  const { backend, seconds } = await loadBackend(path, n, (d) => process.stdout.write(`  ${d.toLocaleString()}\r`), gapUsec, shifted(shiftUs));
  await backend.close();
  console.log(`  loaded in ${seconds.toFixed(0)} s`);
}

/** `reqlog serve` on an existing SQLite file, scans unbounded (a bench asks for whole answers). */
async function serveOn(path: string) {
  const server = await startChildServer(["--db", path, "--listen", "127.0.0.1:0", "--read-scan-rows", "100000000", "--read-scan-ms", "600000"]);
  process.once("exit", () => server.process.kill("SIGKILL"));
  return { server, client: createLogServiceClient({ server: server.address }) };
}

const ask = (client: LogServiceClient, query: string): Promise<QueryAnswer> => readQueryAnswer(client.query({ appId: "forge", query }));

/** The median ms of `runs` calls after one untimed call; the last answer. */
async function timed(f: () => Promise<QueryAnswer>): Promise<{ ms: number; answer: QueryAnswer }> {
  let answer = await f();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    answer = await f();
    times.push(performance.now() - t);
  }
  return { ms: median(times), answer };
}

const iso = (us: number) => new Date(us / 1000).toISOString().replace(".000Z", "Z");

async function scale(): Promise<void> {
  // 30 days: the first request at benchStart, then on average one every 30 d / n.
  const gap = Math.round((30 * dayUs) / big);
  // The 30 days end a day before today (UTC), whole days.
  const start = BigInt(Math.floor(Date.now() * 1000 / dayUs) * dayUs - 31 * dayUs);
  const path = storePath(args.db, "query-10m");
  await loaded(path, big, gap, `${big.toLocaleString()} requests over 30 days`, start - benchStart);
  const { server, client } = await serveOn(path);
  try {
    const firstDay = Number(start);
    const range = `_time:[${iso(firstDay)}, ${iso(firstDay + 29 * dayUs)})`;
    const rollups = `${range} | stats by (route, status_class) count() as requests, sum(response_size) as bytes, quantile(0.99, latency) as p99`;
    const r = await timed(() => ask(client, rollups));
    console.log(`rollups: ${r.answer.rows.length} rows from ${r.answer.summary?.source}, ${r.ms.toFixed(1)} ms  (${rollups})`);
    figures.push({ label: `route × status class over 29 whole days, ${big.toLocaleString()} requests (${r.answer.summary?.source})`, values: [r.ms], unit: "ms", goal: "≤ 20 ms", met: r.ms <= 20 });

    const selective = '"ci-bot/proto/raw/go.mod" | stats count() as n';
    const s = await timed(() => ask(client, selective));
    console.log(`selective phrase: n = ${s.answer.rows[0]?.[0]} from ${s.answer.summary?.source} (examined ${s.answer.summary?.scanned}), ${s.ms.toFixed(1)} ms  (${selective})`);
    figures.push({ label: `count() of a selective phrase over ${big.toLocaleString()} (${s.answer.summary?.source}, ${s.answer.rows[0]?.[0]} matches)`, values: [s.ms], unit: "ms", goal: "≤ 50 ms", met: s.ms <= 50 });
  } finally {
    client.close();
    await server.stop();
  }
}

/** The filters of the day's `stats by (ip)`: as a query, and as SQL for the peers (the same rows). */
const dayFilters = [
  {
    name: "phrase /raw/go.mod",
    query: '"/raw/go.mod"',
    // The phrase rule (docs/query.md): "/" before it is no word character, "d" after it is one, so none may follow.
    duck: "contains(combined, '/raw/go.mod') AND regexp_matches(combined, '/raw/go\\.mod([^\\pL\\pN_]|$)')",
    clickhouse: "position(combined, '/raw/go.mod') > 0 AND match(combined, '/raw/go\\\\.mod($|[^\\\\pL\\\\p{Nd}_])')",
  },
  { name: "status:>=500", query: "status:>=500", duck: "status >= 500", clickhouse: "status >= 500" },
];

async function day(): Promise<void> {
  const gap = Math.round(dayUs / dayN);
  const path = storePath(args["day-db"], "query-day");
  await loaded(path, dayN, gap, `${dayN.toLocaleString()} requests over one day`);
  const duck = await openDuckDbPeer(mkdtempSync(join(tmpdir(), "reqlog-bench-duck-")));
  console.log(`DuckDB ${duck.version}: loading the same ${dayN.toLocaleString()} requests …`);
  await duck.load(trafficRecords(dayN, 42, gap), 10_000);
  // Served once DuckDB is loaded: a connection idle for longer than --idle-timeout (minutes of loading) is closed.
  const { server, client } = await serveOn(path);
  try {
    for (const f of dayFilters) {
      const query = `${f.query} | stats by (ip) count() as n`;
      const sql = `SELECT ip, count(*) AS n FROM requests WHERE app_id = 'forge' AND finished = 1 AND ${f.duck} GROUP BY ip ORDER BY ip`;
      let ours: QueryAnswer | undefined;
      let theirs: unknown[] = [];
      const [a, b] = await alternating(3, Math.max(1, Math.floor(runs / 3)), [
        async () => (ours = await ask(client, query)),
        async () => (theirs = await duck.rows(sql)),
      ]);
      if (ours!.rows.length !== theirs.length) throw new Error(`different answers to ${f.name}: ${ours!.rows.length} groups against DuckDB's ${theirs.length}`);
      console.log(`day, ${f.name}: ${ours!.rows.length} IPs; reqlog (${ours!.summary?.source}) ${a!.toFixed(1)} ms, DuckDB ${b!.toFixed(1)} ms`);
      figures.push({ label: `stats by (ip) of ${f.name}, 1 day of ${dayN.toLocaleString()}: reqlog on SQLite (${ours!.summary?.source}) / DuckDB`, values: [a!, b!], unit: "ms", goal: "≤ 2×", met: a! <= 2 * b! });
    }
  } finally {
    duck.close();
    client.close();
    await server.stop();
  }
  if (args["no-clickhouse"]) return;

  const ch = await startClickHouse({ name: "reqlog-bench-query-", keep: false });
  try {
    console.log(`ClickHouse ${ch.version}: writing the same ${dayN.toLocaleString()} requests through reqlog and raw …`);
    const ours = await serveReqlog("query-ch", ["--store", "clickhouse", "--clickhouse-url", ch.url, "--clickhouse-database", "reqlog"]);
    await ch.client.command({ query: clickhouseTable("raw_requests") });
    await writeEach([reqlogTarget(ours.address), clickhouseTarget(ch.client, "raw_requests")] as WriteTarget<unknown>[], dayN, 1000, 4, 42);
    await clickhouseMerged(ch.client, ["reqlog", "default"]);
    await clickhouseSettled(ch.client);
    for (const f of dayFilters) {
      const query = `${f.query} | stats by (ip) count() as n`;
      const sql = `SELECT ip, count() AS n FROM raw_requests WHERE app_id = 'forge' AND finished = 1 AND ${f.clickhouse} GROUP BY ip ORDER BY ip`;
      let answer: QueryAnswer | undefined;
      let raw: unknown[] = [];
      const [a, b] = await alternating(3, Math.max(1, Math.floor(runs / 3)), [
        async () => (answer = await ask(ours.client, query)),
        async () => (raw = await chRows(ch.client, sql)),
      ]);
      if (answer!.rows.length !== raw.length) throw new Error(`different answers to ${f.name}: ${answer!.rows.length} groups against raw ClickHouse's ${raw.length}`);
      console.log(`day on ClickHouse, ${f.name}: ${answer!.rows.length} IPs; reqlog (${answer!.summary?.source}) ${a!.toFixed(1)} ms, raw ${b!.toFixed(1)} ms`);
      figures.push({ label: `stats by (ip) of ${f.name}, 1 day of ${dayN.toLocaleString()}: reqlog on ClickHouse (${answer!.summary?.source}) / raw ClickHouse`, values: [a!, b!], unit: "ms", goal: "≤ 1.3×", met: a! <= 1.3 * b! });
    }
    await stopReqlog(ours);
  } finally {
    await ch.stop();
  }
}

await scale();
await day();
printTable(figures, ["reqlog", "peer"]);

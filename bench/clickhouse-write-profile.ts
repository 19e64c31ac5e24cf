/**
 * Where the time of reqlog-on-ClickHouse's Write goes: the bench's seeded
 * forge requests written at 1,000 a call (4 in flight) to `reqlog serve
 * --store clickhouse` under `node --cpu-prof`, and to a raw MergeTree table
 * beside it (sides alternating, as the backend bench does). Then
 * ClickHouse's side from its own log: per table the parts written, their
 * rows, bytes and milliseconds, the merges (system.part_log), and the bytes
 * per request of each table and column once merged (system.columns); and the
 * server's CPU profile summed by function (self time) and by file, with the
 * share of the time it was idle and collecting garbage.
 *   npm run build && node dist/bench/clickhouse-write-profile.js [requests [other build's dist/src/main.js]]
 * (default 100000 requests; another build runs as a third side, into a database of its own).
 */
import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startClickHouse } from "../test/helpers/clickhouse-server.js";
import { readCpuProfile, summarizeProfile } from "./harness/cpu-profile.js";
import {
  chRows,
  clickhouseMerged,
  clickhouseTable,
  clickhouseTarget,
  reqlogTarget,
  serveReqlog,
  stopReqlog,
  type WriteTarget,
  writeEach,
} from "./harness/peer-compare.js";

const n = Number(process.argv[2] ?? 100_000);
const baseScript = process.argv[3];

async function main() {
  const ch = await startClickHouse({
    name: "reqlog-bench-chprofile-",
    extraConfig: `
  <part_log><database>system</database><table>part_log</table><flush_interval_milliseconds>1000</flush_interval_milliseconds></part_log>`,
  });
  console.log(`ClickHouse ${ch.version}; ${n.toLocaleString()} requests at 1,000 a call, 4 in flight`);

  // This build, another one (another checkout's dist/src/main.js) if named, and raw inserts, alternating.
  const builds = [{ database: "reqlog", script: undefined as string | undefined }];
  if (baseScript) builds.push({ database: "reqlog_base", script: baseScript });
  const sides = await Promise.all(builds.map(async (build) => {
    const dir = mkdtempSync(join(tmpdir(), "reqlog-chprofile-"));
    const store = ["--store", "clickhouse", "--clickhouse-url", ch.url, "--clickhouse-database", build.database];
    return { ...build, dir, server: await serveReqlog(`chprofile-${build.database}`, store, build.script, ["--cpu-prof", `--cpu-prof-dir=${dir}`]) };
  }));
  await ch.client.command({ query: clickhouseTable("raw_requests") });
  const rates = await writeEach(
    [...sides.map((side) => reqlogTarget(side.server.address)), clickhouseTarget(ch.client, "raw_requests")] as WriteTarget<unknown>[],
    n, 1000, 4, 42,
  );
  const raw = rates.at(-1)!;
  sides.forEach((side, i) =>
    console.log(`Write: ${side.database} ${Math.round(rates[i]!)}/s, raw ClickHouse ${Math.round(raw)}/s (${(rates[i]! / raw).toFixed(2)}×)`));
  for (const side of sides) await stopReqlog(side.server);

  const databases = [...sides.map((side) => `'${side.database}'`), "'default'"].join(", ");
  await ch.client.command({ query: "SYSTEM FLUSH LOGS" });
  console.log("\nparts written (system.part_log, NEW_PART):");
  console.table(await chRows(ch.client, `
    SELECT database, table, count() AS parts, sum(rows) AS rows_written, round(sum(size_in_bytes) / 1e6, 1) AS MB,
      sum(duration_ms) AS part_ms, round(avg(rows)) AS rows_per_part
    FROM system.part_log WHERE event_type = 'NEW_PART' AND database IN (${databases})
    GROUP BY database, table ORDER BY database, part_ms DESC`));
  console.log("merges (system.part_log, MERGE_PARTS):");
  console.table(await chRows(ch.client, `
    SELECT database, table, count() AS merges, sum(duration_ms) AS merge_ms
    FROM system.part_log WHERE event_type = 'MERGE_PARTS' AND database IN (${databases})
    GROUP BY database, table ORDER BY database, merge_ms DESC`));

  // Disk: bytes per request by table before merging all (as the inserts left it), then once merged as a settled store is.
  const perRequest = `round(sum(data_compressed_bytes) / ${n}, 1)`;
  const byTable = `
    SELECT database, table, ${perRequest} AS bytes FROM system.columns WHERE database IN (${databases})
    GROUP BY database, table HAVING bytes > 0 ORDER BY database, bytes DESC`;
  console.log("disk per request, as written (system.columns):");
  console.table(await chRows(ch.client, byTable));
  await clickhouseMerged(ch.client, [...sides.map((side) => side.database), "default"]);
  console.log("disk per request, after OPTIMIZE … FINAL:");
  console.table(await chRows(ch.client, byTable));
  console.table(await chRows(ch.client, `
    SELECT table, name, ${perRequest} AS bytes FROM system.columns WHERE database = 'reqlog' AND table IN ('requests', 'lines')
    GROUP BY table, name HAVING bytes >= 0.5 ORDER BY table, bytes DESC`));

  for (const side of sides) {
    const file = readdirSync(side.dir).find((f) => f.endsWith(".cpuprofile"));
    console.log(`\n${side.database}: profile ${side.dir}/${file ?? "(none written)"}`);
    if (file) console.log(summarizeProfile(readCpuProfile(join(side.dir, file)), n));
  }
  await ch.stop();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

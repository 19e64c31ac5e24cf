/**
 * Where a Write's time goes on SQLite: the bench's seeded forge requests
 * written at `batch` records a call (4 in flight) to `reqlog serve` under
 * `node --cpu-prof`, beside raw better-sqlite3 inserts of the same rows
 * (peer-compare.ts rawSqliteTarget) and, when named, another build of
 * reqlog, sides alternating by 100,000 records. Prints each side's rate and
 * its server's CPU per record (process CPU time, every thread, ÷ records),
 * then each reqlog server's profile summed (cpu-profile.ts).
 *   npm run build && node dist/bench/write-profile.js [requests [batch [other build's dist/src/main.js [sync]]]]
 * (defaults 200000 requests, 1,000 a call, no other build, --sync normal as bench:clickhouse).
 */
import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readCpuProfile, summarizeProfile } from "./harness/cpu-profile.js";
import { rawSqliteTarget, reqlogTarget, serveReqlog, stopReqlog, type WriteTarget, writeEachMeasured } from "./harness/peer-compare.js";
import { benchDbPath } from "./load.js";

const n = Number(process.argv[2] ?? 200_000);
const batch = Number(process.argv[3] ?? 1000);
const otherScript = process.argv[4] || undefined;
const sync = (process.argv[5] ?? "normal") as "normal" | "full";
const lines = Number(process.env.PROFILE_LINES ?? 30);

async function main() {
  const builds: { name: string; script: string | undefined }[] = [{ name: "this build", script: undefined }];
  if (otherScript) builds.push({ name: otherScript, script: otherScript });
  const sides = await Promise.all(builds.map(async (build, i) => {
    const dir = mkdtempSync(join(tmpdir(), "reqlog-write-profile-"));
    const started = performance.now();
    const server = await serveReqlog(`write-profile-${i}`, ["--sync", sync], build.script, ["--cpu-prof", `--cpu-prof-dir=${dir}`]);
    // The profile's first samples are the server starting: left out of its summary.
    return { ...build, dir, server, startMs: performance.now() - started };
  }));
  const raw = rawSqliteTarget(benchDbPath("write-profile-raw"), sync);
  console.log(`${n.toLocaleString()} requests at ${batch.toLocaleString()} a call, 4 in flight, --sync ${sync}; sides alternate`);
  const figures = await writeEachMeasured(
    [...sides.map((side) => reqlogTarget(side.server.address, side.server)), raw] as WriteTarget<unknown>[],
    n, batch, 4, 42,
  );
  const rawFigures = figures.at(-1)!;
  for (const [i, side] of sides.entries()) {
    const f = figures[i]!;
    console.log(`${side.name}: ${Math.round(f.rate).toLocaleString()} records/s, server CPU ${f.cpuPerRecord!.toFixed(1)} µs a record; ` +
      `${(f.rate / rawFigures.rate).toFixed(2)}× raw better-sqlite3`);
  }
  console.log(`raw better-sqlite3: ${Math.round(rawFigures.rate).toLocaleString()} records/s, ${rawFigures.cpuPerRecord!.toFixed(1)} µs a record`);
  for (const side of sides) await stopReqlog(side.server);
  for (const side of sides) {
    const file = readdirSync(side.dir).find((f) => f.endsWith(".cpuprofile"));
    console.log(`\n${side.name}: profile ${side.dir}/${file ?? "(none written)"}`);
    if (file) console.log(summarizeProfile(readCpuProfile(join(side.dir, file)), n, lines, side.startMs));
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

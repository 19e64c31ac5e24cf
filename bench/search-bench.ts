/**
 * Regex search and disk use against plain text: the same requests' combined
 * lines as a text file, searched with ripgrep (installed from apt when
 * missing), and its size per request against reqlog's database file.
 *   npm run bench:search -- [requests] [--without ripgrep]     (default 1000000)
 */
import { execFileSync, spawnSync } from "node:child_process";
import { statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import Database from "better-sqlite3";
import { combinedLineOf, combinedMatchArgsSql } from "../src/store/sqlite/read/combined-match.js";
import { openSqliteBackend } from "../src/store/sqlite/sqlite-backend.js";
import { benchArgs, requiredPeer } from "./harness/bench-args.js";
import { startBenchServer } from "./harness/bench-server.js";
import { benchDbPath, benchStart, loadBackend } from "./load.js";

const args = benchArgs();
const n = Number(args.positional[0] ?? 1_000_000);
const pattern = '"GET /api/v1/repos/[^/]+/[^/]+/raw/go\\.mod HTTP/2\\.0" 500 ';

/** ripgrep's path, installing Debian's package when it is missing; undefined when it cannot be had. */
async function ripgrep(): Promise<string | undefined> {
  const found = spawnSync("sh", ["-c", "command -v rg"], { encoding: "utf8" }).stdout.trim();
  if (found) return found;
  console.log("ripgrep is missing: installing Debian's ripgrep package (apt-get) …");
  const install = spawnSync("sh", ["-c", "apt-get update -qq && apt-get install -y -qq ripgrep"], { stdio: "inherit" });
  const after = spawnSync("sh", ["-c", "command -v rg"], { encoding: "utf8" }).stdout.trim();
  if (install.status !== 0 || !after) {
    return undefined;
  }
  return after;
}

async function main() {
  const path = benchDbPath("search");
  console.log(`loading ${n.toLocaleString()} forge requests …`);
  const { backend } = await loadBackend(path, n);
  await backend.close();

  // Disk: the database after a checkpoint, against the same lines as text.
  const db = new Database(path);
  db.pragma("wal_checkpoint(TRUNCATE)");
  const text = join(dirname(path), "combined.log");
  const rows = db.prepare(`SELECT ${combinedMatchArgsSql} FROM requests r`).raw().safeIntegers().all() as unknown[][];
  const lines = rows.map(combinedLineOf).join("\n") + "\n";
  writeFileSync(text, lines);
  const requests = db.prepare("SELECT count(*) FROM requests").pluck().get() as number;
  const appLines = db.prepare("SELECT sum(line_count) FROM requests").pluck().get() as number;
  db.close();
  const dbBytes = statSync(path).size;
  const textBytes = statSync(text).size;

  // reqlog's Read with the pattern over every request (budget raised to cover all).
  const server = await startBenchServer(openSqliteBackend({ path }), { readScanRows: 1e9, readScanMs: 1e9 });
  let readMs = Number.POSITIVE_INFINITY;
  let readMatches = 0;
  for (let run = 0; run < 3; run++) {
    let matches = 0;
    const started = performance.now();
    for (const appId of ["forge", "forge-staging", "pages"]) {
      const r = await server.client.read({
        appId, count: 1000n, includeIncomplete: true, startTime: benchStart, combinedLogRegex: pattern,
      });
      matches += r.log.length;
    }
    readMs = Math.min(readMs, performance.now() - started);
    readMatches = matches;
  }
  await server.close();

  console.log(`\n${requests.toLocaleString()} requests with ${appLines.toLocaleString()} app lines:`);
  console.log(`  disk: reqlog database ${(dbBytes / requests).toFixed(1)} bytes/request (records, app lines, indexes, rollups)`);
  console.log(`        combined lines as plain text ${(textBytes / requests).toFixed(1)} bytes/request (baseline: the lines alone)   ratio ${(dbBytes / textBytes).toFixed(2)}x`);
  const rg = await requiredPeer(args, "ripgrep", ripgrep);
  if (rg) {
    let rgMs = Number.POSITIVE_INFINITY;
    let rgMatches = 0;
    for (let run = 0; run < 3; run++) {
      const started = performance.now();
      rgMatches = Number(execFileSync(rg, ["-c", pattern, text], { encoding: "utf8" }).trim() || 0);
      rgMs = Math.min(rgMs, performance.now() - started);
    }
    console.log(`  regex over every line: reqlog Read ${readMs.toFixed(0)} ms (${readMatches} matches)  vs  rg ${rgMs.toFixed(0)} ms (${rgMatches} matches)   ratio ${(readMs / rgMs).toFixed(1)}x`);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

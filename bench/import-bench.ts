/**
 * `reqlog import` of an nginx access log, end to end (read, parsed, sent
 * over Ingest, committed and acknowledged, the server at its default
 * `--sync full`), against `wc -l` and GoAccess
 * (Debian's `goaccess`, a reference C parser of the same format) on the same
 * file, in one run, the sides taking turns. Also the importer's parsing
 * alone (no server), to show where the time goes.
 *   npm run bench:import -- [lines]      (default 1,000,000)
 */
import { execFileSync, spawn } from "node:child_process";
import { createWriteStream, existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { formatCombined } from "../src/format/combined-line.js";
import { createAccessLogParser } from "../src/ingest/access-log-parser.js";
import { chunkRecords } from "../src/ingest/chunk-records.js";
import { lineChunks } from "../src/ingest/line-chunks.js";
import { openLogInput } from "../src/ingest/log-input.js";
import { createRejectedLines } from "../src/ingest/rejected-lines.js";
import { forgeRouteTable } from "../src/routes/route-table.js";
import { withDebianPackage } from "../test/helpers/local-process.js";
import { forgeTraffic } from "./forge-traffic.js";
import { mainScript, startChildServer } from "./harness/child-server.js";
import { benchStart, median } from "./load.js";

const total = Number(process.argv[2] ?? 1_000_000);
const rounds = 3;
const folder = mkdtempSync(join(tmpdir(), "reqlog-import-bench-"));
const log = join(folder, "access.log");

/** The forge's traffic as nginx writes it in its `combined` format. */
async function writeLog(): Promise<void> {
  const out = createWriteStream(log);
  let buffered = "";
  for (const record of forgeTraffic({ seed: 13, startUsec: benchStart, gapUsec: 20_000, total, inProgressWindow: 0 })) {
    buffered += `${formatCombined(record)}\n`;
    if (buffered.length > 1 << 20) {
      if (!out.write(buffered)) await new Promise((r) => out.once("drain", () => r(undefined)));
      buffered = "";
    }
  }
  out.end(buffered);
  await new Promise((r) => out.once("close", () => r(undefined)));
}

function timed(command: string, args: string[]): number {
  const started = performance.now();
  execFileSync(command, args, { stdio: ["ignore", "ignore", "inherit"], maxBuffer: 1 << 30 });
  return (performance.now() - started) / 1000;
}

const wc = () => timed("wc", ["-l", log]);

const goaccessBinary = () => withDebianPackage("goaccess", () => (existsSync("/usr/bin/goaccess") ? "/usr/bin/goaccess" : undefined));
const goaccess = () => timed(goaccessBinary(), [log, "--log-format=COMBINED", "--no-progress", "--no-global-config", "-o", join(folder, "report.json")]);

/** The importer's own work without a server: reading, splitting, parsing into records. */
async function parseOnly(): Promise<number> {
  const parser = createAccessLogParser({}, { appId: "forge", versionId: "access-log", routes: forgeRouteTable });
  const rejected = createRejectedLines({});
  const started = performance.now();
  let records = 0;
  for await (const chunk of lineChunks(openLogInput(log).bytes, 1000)) records += chunkRecords(chunk, log, parser, rejected).records.length;
  if (records !== total || rejected.count !== 0) throw new Error(`parsed ${records} records, ${rejected.count} rejected, of ${total}`);
  return (performance.now() - started) / 1000;
}

/** The server's CPU time per record of each import (µs). */
const serverCpu: number[] = [];

/**
 * `reqlog import` as a user runs it, into a fresh `reqlog serve` (its own
 * process, its own database, the default `--sync full`).
 */
async function reqlogImport(round: number): Promise<number> {
  const server = await startChildServer(["--db", join(folder, `reqlog-${round}.db`), "--listen", "127.0.0.1:0", "--http-listen", "off"]);
  try {
    const cpu = server.cpuMicros();
    const started = performance.now();
    const child = spawn(process.execPath, [mainScript, "import", "--server", server.address, "--app", "forge", "--json", log], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c));
    const code = await new Promise((r) => child.once("close", r));
    const seconds = (performance.now() - started) / 1000;
    const summary = JSON.parse(out) as { lines: number; records: number; rejected: number };
    if (code !== 0 || summary.records !== total) throw new Error(`reqlog import exited ${code}: ${out}`);
    serverCpu.push((server.cpuMicros() - cpu) / total);
    return seconds;
  } finally {
    await server.stop();
    rmSync(join(folder, `reqlog-${round}.db`), { force: true });
    rmSync(join(folder, `reqlog-${round}.db-wal`), { force: true });
  }
}

const rate = (seconds: number) => Math.round(total / seconds);
const fmt = (n: number) => n.toLocaleString("en-US");

async function main() {
  await writeLog();
  const bytes = statSync(log).size;
  console.log(`nginx combined log: ${fmt(total)} lines, ${(bytes / 1e6).toFixed(0)} MB (forge traffic, seed 13)`);
  const results: Record<"wc" | "goaccess" | "parse" | "reqlog", number[]> = { wc: [], goaccess: [], parse: [], reqlog: [] };
  for (let round = 1; round <= rounds; round++) {
    // The sides take turns going first: timings on a shared VM drift.
    const order = round % 2 === 1 ? (["wc", "goaccess", "parse", "reqlog"] as const) : (["reqlog", "parse", "goaccess", "wc"] as const);
    for (const side of order) {
      const seconds = side === "wc" ? wc() : side === "goaccess" ? goaccess() : side === "parse" ? await parseOnly() : await reqlogImport(round);
      results[side].push(seconds);
      const cpu = side === "reqlog" ? `  (server CPU ${serverCpu.at(-1)!.toFixed(1)} µs a record)` : "";
      console.log(`  round ${round}: ${side.padEnd(8)} ${seconds.toFixed(2)} s  ${fmt(rate(seconds))} lines/s${cpu}`);
    }
  }
  const m = Object.fromEntries(Object.entries(results).map(([k, v]) => [k, median(v)])) as Record<keyof typeof results, number>;
  console.log(`reqlog import of ${fmt(total)} nginx lines, end to end (parsed, sent, committed), median of ${rounds} rounds:`);
  console.log(`  wc -l                                ${m.wc.toFixed(2)} s  ${fmt(rate(m.wc))} lines/s`);
  console.log(`  goaccess --log-format=COMBINED       ${m.goaccess.toFixed(2)} s  ${fmt(rate(m.goaccess))} lines/s`);
  console.log(`  reqlog's parsing alone (no server)   ${m.parse.toFixed(2)} s  ${fmt(rate(m.parse))} lines/s   ${(m.goaccess / m.parse).toFixed(2)}x goaccess`);
  console.log(`  reqlog import, end to end            ${m.reqlog.toFixed(2)} s  ${fmt(rate(m.reqlog))} lines/s   ${(m.goaccess / m.reqlog).toFixed(2)}x goaccess, ${(m.wc / m.reqlog).toFixed(3)}x wc -l`);
  console.log(`  the server's CPU per record stored (process CPU ÷ records, median): ${median(serverCpu).toFixed(1)} µs`);
  console.log(`  goal: >= 2x GoAccess end to end: ${m.goaccess / m.reqlog >= 2 ? "met" : "not met"}`);
}

main()
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => rmSync(folder, { recursive: true, force: true }));

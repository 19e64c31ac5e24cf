/**
 * Every benchmark of docs/benchmarks.md, one after another (they must not
 * share the machine's two cores), each printing its figures and baseline;
 * those it leaves out are named first, with why (bench-list.ts):
 *   npm run bench                 full sizes (about two and a half hours on 2 cores: the 10M stores dominate)
 *   npm run bench -- --quick      small sizes, to see that each one runs
 * The output is also written to bench-results.txt.
 */
import { spawn } from "node:child_process";
import { createWriteStream, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { packageRoot } from "../src/package-root.js";
import { benches, leftOut } from "./bench-list.js";

const quick = process.argv.includes("--quick");

const out = createWriteStream(join(packageRoot(), "bench-results.txt"));
const log = (text: string) => {
  process.stdout.write(text);
  out.write(text);
};

/** Runs one bench with a temporary folder of its own (its databases reach gigabytes), removed after it. */
async function run(script: string, args: string[]): Promise<number | null> {
  const dir = mkdtempSync(join(tmpdir(), `reqlog-${script}-`));
  const child = spawn(process.execPath, [join(packageRoot(), "dist", "bench", `${script}.js`), ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, TMPDIR: dir },
  });
  child.stdout.on("data", (c: Buffer) => log(c.toString()));
  child.stderr.on("data", (c: Buffer) => log(c.toString()));
  const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
  rmSync(dir, { recursive: true, force: true });
  return code;
}

async function main() {
  log(`reqlog benchmarks, ${new Date().toISOString()}, Node ${process.version}${quick ? " (quick sizes)" : ""}\n`);
  for (const [script, why] of Object.entries(leftOut)) log(`left out: ${script}: ${why}\n`);
  const failed: string[] = [];
  for (const { script, full, quick: small } of benches) {
    const args = quick ? small : full;
    log(`\n=== ${script} ${args.join(" ")} ===\n`);
    const started = performance.now();
    const code = await run(script, args);
    log(`=== ${script}: ${code === 0 ? "done" : `FAILED (exit ${code})`} in ${((performance.now() - started) / 1000).toFixed(0)} s ===\n`);
    if (code !== 0) failed.push(script);
  }
  log(failed.length ? `\nfailed: ${failed.join(", ")}\n` : "\nall benchmarks ran\n");
  out.end();
  process.exitCode = failed.length ? 1 : 0;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

/**
 * The long crash run: `reqlog serve` under load, killed with SIGKILL, again
 * and again (default 20 cycles); then every acknowledged write must be there
 * and the database must pass integrity_check.
 *   npm run crash:long -- [cycles]
 */
import { crashCycles } from "./harness/crash.js";
import { benchDbPath } from "./load.js";

const cycles = Number(process.argv[2] ?? 20);

crashCycles(benchDbPath("crash"), cycles, (cycle, acked) => console.log(`  cycle ${cycle + 1}: ${acked} writes acknowledged, then kill -9`))
  .then((report) => {
    console.log(`crash: ${report.cycles} kill -9 cycles, ${report.acknowledged.toLocaleString()} acknowledged writes, ${report.missing.length} missing, integrity_check: ${report.integrity}`);
    process.exit(report.missing.length === 0 && report.integrity === "ok" ? 0 : 1);
  })
  .catch((err) => {
    console.error(err);
    process.exit(1);
  });

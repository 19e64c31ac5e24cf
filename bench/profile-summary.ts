/**
 * Sums CPU profiles written by `node --cpu-prof` (a bench run with
 * REQLOG_BENCH_CPU_PROF=DIR profiles every server it starts): self time by
 * file and function, time under each function, idle and garbage collection.
 *   node dist/bench/profile-summary.js FILE.cpuprofile [records [lines]]
 * With `records`, each line also reads as µs of the main thread per record.
 */
import { readCpuProfile, summarizeProfile } from "./harness/cpu-profile.js";

const [file, records, lines] = process.argv.slice(2);
if (!file) {
  console.error("usage: node dist/bench/profile-summary.js FILE.cpuprofile [records [lines]]");
  process.exit(2);
}
console.log(summarizeProfile(readCpuProfile(file), records ? Number(records) : undefined, lines ? Number(lines) : 25));

/**
 * The long fuzz run: hostile messages to every RPC of a real server (default
 * 1,000,000), then the checks of the suite's fast run.
 *   npm run fuzz:long -- [messages] [seed]
 */
import { Client, credentials } from "@grpc/grpc-js";
import { openSqliteBackend } from "../src/store/sqlite/sqlite-backend.js";
import { startBenchServer } from "./harness/bench-server.js";
import { fuzz } from "./harness/fuzz.js";
import { createHealthClient } from "./harness/health-client.js";
import { benchDbPath } from "./load.js";

const total = Number(process.argv[2] ?? 1_000_000);
const seed = Number(process.argv[3] ?? 1);

async function main() {
  const server = await startBenchServer(openSqliteBackend({ path: benchDbPath("fuzz") }), { maxMessageBytes: 256 * 1024 });
  // One connection for every chunk (given an address, fuzz() would open one per chunk).
  const client = new Client(server.address, credentials.createInsecure());
  const totals = { sent: 0, seconds: 0, transportResets: 0, codes: {} as Record<string, number>, failures: [] as unknown[] };
  const chunk = 50_000;
  for (let done = 0; done < total; done += chunk) {
    const r = await fuzz(client, Math.min(chunk, total - done), seed + done);
    totals.sent += r.sent;
    totals.seconds += r.seconds;
    totals.failures.push(...r.failures);
    totals.transportResets += r.transportResets;
    for (const [k, v] of Object.entries(r.codes)) totals.codes[k] = (totals.codes[k] ?? 0) + v;
    process.stdout.write(`  ${totals.sent.toLocaleString()} sent, ${totals.failures.length} INTERNAL/UNKNOWN\r`);
  }
  const health = createHealthClient(server.address);
  const h = await health.check({});
  health.close();
  const integrity = server.backend.db.pragma("integrity_check", { simple: true });
  console.log(`\nfuzz: ${totals.sent.toLocaleString()} hostile messages in ${totals.seconds.toFixed(0)} s (${Math.round(totals.sent / totals.seconds)}/s), seed ${seed}`);
  console.log(`  answers: ${JSON.stringify(totals.codes)}`);
  console.log(`  cut off by HTTP/2 rapid-reset protection (connection closed, not an answer): ${totals.transportResets}`);
  console.log(`  INTERNAL or UNKNOWN: ${totals.failures.length}; health afterwards: ${h.status === 1 ? "SERVING" : h.status}; integrity_check: ${integrity}`);
  if (totals.failures.length > 0) console.log(totals.failures.slice(0, 10));
  client.close();
  await server.close();
  process.exit(totals.failures.length === 0 && integrity === "ok" ? 0 : 1);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

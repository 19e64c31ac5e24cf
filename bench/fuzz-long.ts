/**
 * The long fuzz run: hostile messages to every RPC of a real server (default
 * 1,000,000), then the checks of the suite's fast run.
 *   npm run fuzz:long -- [messages] [seed]
 */
import { create } from "@bufbuild/protobuf";
import { Health, HealthCheckRequestSchema, type HealthCheckResponse } from "../gen/health/v1/health_pb.js";
import { createAuthorizer } from "../src/auth/authorizer.js";
import { createTokenStore } from "../src/auth/token-store.js";
import { createCliClient } from "../src/cli/client.js";
import { systemClock } from "../src/clock.js";
import { clientDefinition } from "../src/grpc/service-definition.js";
import { startServer } from "../src/grpc/server.js";
import { defaultLimits } from "../src/limits.js";
import { createLogger } from "../src/logger.js";
import { openDatabase } from "../src/store/sqlite/open-database.js";
import { createSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import { LogService } from "../gen/reqlog/v1/log_service_pb.js";
import { credentials, makeGenericClientConstructor } from "@grpc/grpc-js";
import { fuzz } from "./harness/fuzz.js";
import { benchDbPath } from "./load.js";

const total = Number(process.argv[2] ?? 1_000_000);
const seed = Number(process.argv[3] ?? 1);

async function main() {
  const db = openDatabase({ path: benchDbPath("fuzz") });
  const store = createSqliteStore(db, systemClock);
  const auth = createAuthorizer(createTokenStore(db, systemClock), { callsPerSecond: 0 });
  const limits = { ...defaultLimits, maxMessageBytes: 256 * 1024 };
  const server = await startServer({ store, limits, auth }, { listen: "127.0.0.1:0", shutdownTimeoutMs: 2000, logger: createLogger("silent") });
  const Ctor = makeGenericClientConstructor(clientDefinition(LogService), LogService.typeName);
  const client = new Ctor(server.address, credentials.createInsecure());
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
  const health = createCliClient(Health, server.address);
  const h = await health.unary<HealthCheckResponse>("check", create(HealthCheckRequestSchema, {}));
  health.close();
  const integrity = db.pragma("integrity_check", { simple: true });
  console.log(`\nfuzz: ${totals.sent.toLocaleString()} hostile messages in ${totals.seconds.toFixed(0)} s (${Math.round(totals.sent / totals.seconds)}/s), seed ${seed}`);
  console.log(`  answers: ${JSON.stringify(totals.codes)}`);
  console.log(`  cut off by HTTP/2 rapid-reset protection (connection closed, not an answer): ${totals.transportResets}`);
  console.log(`  INTERNAL or UNKNOWN: ${totals.failures.length}; health afterwards: ${h.status === 1 ? "SERVING" : h.status}; integrity_check: ${integrity}`);
  if (totals.failures.length > 0) console.log(totals.failures.slice(0, 10));
  client.close();
  await server.shutdown();
  process.exit(totals.failures.length === 0 && integrity === "ok" ? 0 : 1);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

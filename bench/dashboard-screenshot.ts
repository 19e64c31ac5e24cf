/**
 * The dashboard on realistic forge traffic: seeds a fresh server with
 * forge-traffic requests over the last two days (a day/night rhythm, a
 * version rollout and a one-hour object-storage incident), opens the
 * dashboard in Debian's chromium, prints how long the first view took to be
 * complete (and, over --loads more page loads, the median), and saves a
 * screenshot (bench/out/dashboard.png by default; the README's is made with
 * --out docs/dashboard.png).
 *
 *   npm run bench:dashboard -- [--out FILE] [--requests N] [--hours H] [--view V] [--q QUERY] [--loads N] [--db FILE] [--keep]
 *
 * --q is Explore's query (docs/explore.png: --view explore --q '_time:12h | stats by (_time:1h, status_class) count() as requests').
 *
 * --db keeps the seeded store in FILE and reuses it on later runs (seeding a
 * million requests takes minutes); --keep leaves the server running (its URL
 * is printed) until Ctrl-C.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { create } from "@bufbuild/protobuf";
import { LogLineSchema, type RequestLog } from "../gen/reqlog/v1/log_service_pb.js";
import { createLogServiceClient } from "../src/client/log-service-client.js";
import { dashboardPages } from "../src/http/dashboard-pages.js";
import { defaultLimits } from "../src/limits.js";
import { createLogger } from "../src/logger.js";
import { startReqlogServer } from "../src/reqlog-server.js";
import { openSqliteBackend } from "../src/store/sqlite/sqlite-backend.js";
import { launchChromium } from "../test/helpers/browser.js";
import { createRandom, forgeTraffic, handlerRoute } from "./forge-traffic.js";

const { values: args } = parseArgs({
  options: {
    out: { type: "string", default: "bench/out/dashboard.png" },
    requests: { type: "string", default: "80000" },
    hours: { type: "string", default: "48" },
    view: { type: "string", default: "" },
    q: { type: "string", default: "" },
    loads: { type: "string", default: "5" },
    db: { type: "string" },
    keep: { type: "boolean", default: false },
  },
});
const total = Number(args.requests);
const hours = Number(args.hours);

/** Requests per hour of the day (UTC), relative: quiet nights, a working-day hump. */
function dayRate(hourOfDay: number): number {
  return 0.25 + Math.exp(-(((hourOfDay - 14) / 4.5) ** 2)) + 0.35 * Math.exp(-(((hourOfDay - 9.5) / 1.5) ** 2));
}

/**
 * Moves uniformly spread times onto the day/night rhythm: the inverse of the
 * rate's cumulative distribution over the span (minute steps), so the order
 * of the requests is kept.
 */
function diurnalWarp(startSec: number, spanSec: number): (fraction: number) => number {
  const steps = Math.ceil(spanSec / 60);
  const cdf = new Float64Array(steps + 1);
  for (let i = 0; i < steps; i++) cdf[i + 1] = cdf[i]! + dayRate((((startSec + i * 60) / 3600) % 24 + 24) % 24);
  return (fraction) => {
    const target = fraction * cdf[steps]!;
    let lo = 0;
    let hi = steps;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid + 1]! < target) lo = mid + 1;
      else hi = mid;
    }
    const within = (target - cdf[lo]!) / Math.max(1e-12, cdf[lo + 1]! - cdf[lo]!);
    return startSec + (lo + within) * 60;
  };
}

const busyClients = ["10.20.0.11", "10.20.0.11", "10.20.0.11", "10.20.0.12", "10.20.0.12", "10.20.0.13", "172.16.4.20", "172.16.4.20", "192.0.2.44", "198.51.100.7"];

function* seedTraffic(nowSec: number): Generator<RequestLog> {
  const startSec = nowSec - hours * 3600;
  const warp = diurnalWarp(startSec, hours * 3600);
  const gapUsec = Math.floor((hours * 3600e6) / total);
  const random = createRandom(7);
  // One whole clock hour, so that it fills one chart bucket.
  const incidentHour = Math.floor((startSec + hours * 3600 * 0.72) / 3600) * 3600;
  const incident = { from: incidentHour, to: incidentHour + 3600 };
  const rollout = startSec + hours * 3600 * 0.55;
  for (const log of forgeTraffic({ seed: 42, startUsec: BigInt(startSec) * 1_000_000n, gapUsec, total, inProgressWindow: 40 })) {
    const uniform = Number(log.startTime) / 1e6 - startSec;
    const start = warp(Math.min(1, uniform / (hours * 3600)));
    const shift = BigInt(Math.round(start * 1e6)) - log.startTime;
    log.startTime += shift;
    if (log.finished) log.endTime += shift;
    for (const line of log.line) line.time += shift;
    log.urlMapEntry = handlerRoute(log.resource);
    // A few busy clients (CI runners, a mirror, the office NAT) make much of the traffic.
    if (random.next() < 0.45) log.ip = random.pick(busyClients);
    // v43 rolls out after the rollout point; before it, v41 and v42 serve.
    log.versionId = start < rollout ? random.pick(["v41", "v42", "v42"]) : random.pick(["v42", "v43", "v43", "v43"]);
    if (start >= incident.from && start < incident.to && log.resource.includes("/zip/raw") && log.finished) {
      log.status = 503;
      log.responseSize = 0n;
      log.latency = log.latency * 6n + 2_000_000n;
      log.endTime = log.startTime + log.latency;
      log.line = [create(LogLineSchema, { time: log.endTime - 1000n, level: 3, logMessage: "object storage: read timed out, answering 503" })];
    }
    yield log;
  }
}

async function main() {
  const folder = mkdtempSync(join(tmpdir(), "reqlog-dashboard-"));
  const path = args.db ?? join(folder, "reqlog.db");
  const seeded = args.db !== undefined && existsSync(args.db);
  const backend = openSqliteBackend({ path, now: () => BigInt(Date.now()) * 1000n });
  const server = await startReqlogServer(backend, {
    listen: "127.0.0.1:0",
    httpListen: "127.0.0.1:0",
    pages: [dashboardPages()],
    limits: defaultLimits,
    logger: createLogger("silent"),
    shutdownTimeoutMs: 1000,
  });
  const client = createLogServiceClient({ server: server.grpc.address });
  const nowSec = Math.floor(Date.now() / 1000);
  const began = performance.now();
  if (seeded) {
    console.log(`reusing the store seeded before in ${path}`);
  } else {
    let batch: RequestLog[] = [];
    for (const log of seedTraffic(nowSec)) {
      batch.push(log);
      if (batch.length === 1000) {
        await client.write({ log: batch });
        batch = [];
      }
    }
    if (batch.length > 0) await client.write({ log: batch });
    console.log(`seeded ${total} requests over ${hours} h in ${((performance.now() - began) / 1000).toFixed(1)} s`);
  }
  const instances: [string, string, string, string][] = [
    ["default", "v43", "i-7f3a", "serving"],
    ["default", "v43", "i-91c2", "serving"],
    ["default", "v42", "i-2b80", "draining: v43 rollout"],
    ["api", "v43", "i-c4d1", "serving"],
    ["git", "v43", "i-0e55", "degraded: object storage latency"],
  ];
  for (const [module, version, instance, status] of instances) {
    await client.setStatus(
      { status },
      { headers: { "reqlog-app-id": "forge", "reqlog-module-id": module, "reqlog-version-id": version, "reqlog-instance-id": instance } },
    );
  }
  const base = `http://${server.http!.address}`;
  const url = `${base}/?app=forge${args.view ? `&view=${args.view}` : ""}&range=${hours <= 48 ? "24h" : hours <= 168 ? "7d" : "30d"}${args.q ? `&q=${encodeURIComponent(args.q)}` : ""}`;

  const browser = await launchChromium();
  const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
  page.on("pageerror", (err) => console.error(`page error: ${err.message}`));
  const overview = args.view === "" || args.view === "overview";
  /** Opens the page; the ms until the totals and charts are drawn, and until the top routes are. */
  const load = async (): Promise<[number, number]> => {
    const opened = performance.now();
    await page.goto(url);
    await page.locator('[data-testid="kpis"][data-state="ready"]').waitFor({ timeout: 60_000 });
    const figures = performance.now() - opened;
    await page.locator('[data-testid="top-routes"], section.routes[data-state="empty"], section.routes[data-state="error"]').first().waitFor({ timeout: 60_000 });
    return [figures, performance.now() - opened];
  };
  if (overview) {
    const [figures, routes] = await load();
    console.log(`first view complete (every figure and chart) in ${Math.round(figures)} ms, top routes in ${Math.round(routes)} ms`);
    const loads: [number, number][] = [];
    for (let i = 0; i < Number(args.loads); i++) loads.push(await load());
    if (loads.length > 0) {
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
      console.log(`${loads.length} more loads: figures and charts ${loads.map(([f]) => Math.round(f)).join(", ")} ms (median ${Math.round(median(loads.map(([f]) => f)))}),`);
      console.log(`  top routes ${loads.map(([, r]) => Math.round(r)).join(", ")} ms (median ${Math.round(median(loads.map(([, r]) => r)))})`);
    }
  } else {
    await page.goto(url);
    await page.waitForLoadState("networkidle");
  }
  await page.waitForTimeout(300);
  mkdirSync(dirname(args.out), { recursive: true });
  await page.screenshot({ path: args.out, fullPage: true });
  console.log(`screenshot: ${args.out} (${url})`);
  await browser.close();

  const stop = async () => {
    client.close();
    await server.shutdown();
    await backend.close();
    rmSync(folder, { recursive: true, force: true });
  };
  if (args.keep) {
    console.log(`serving ${base}/?app=forge until Ctrl-C (gRPC on ${server.grpc.address})`);
    process.once("SIGINT", () => void stop().then(() => process.exit(0)));
    return;
  }
  await stop();
}

await main();

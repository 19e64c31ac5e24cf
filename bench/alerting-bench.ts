/**
 * The goals of alerting (issue 27), each measured against a peer in the same run:
 *
 * 1. Write-path cost of the request metrics: `reqlog serve` counting them
 *    (the store notes each newly finished request, the metrics count it)
 *    between two `reqlog serve --no-request-metrics` (the store notes nothing;
 *    two, to show how far equal sides drift), sides alternating by 100,000
 *    records, server CPU per stored record (process CPU ÷ records); and the
 *    counting alone, in this process, per record; and a CPU profile of a
 *    server counting them: the share of its main thread's busy time spent
 *    noting and counting. Goal: ≤ 3% of a record.
 * 2. A scrape of /metrics with 5,000 series (samples, as Prometheus counts
 *    them: scrape_samples_scraped): reqlog's GET /metrics beside prom-client's
 *    Histograms of the same series served the same way, alternating, and the
 *    server's CPU time per scrape (on a loaded machine the wall time is mostly
 *    waiting for a core). Goal ≤ 20 ms.
 * 3. A 5xx burst to the webhook: real Prometheus (scrape and rules every 1 s,
 *    docs/alerts' rules on shortened windows), Alertmanager (group_wait 1 s)
 *    and a webhook receiver; steady traffic on a route, then 5xx on it, timed
 *    from the first 5xx acknowledged to the notification, once per route.
 *    Goal ≤ scrape interval + rule interval + 2 s = 4 s.
 *
 *   npm run bench:alerting -- [--records N] [--series N] [--bursts N] [--screenshot FILE] [--parts 1,2,3]
 *
 * --screenshot saves the dashboard's Overview while the last burst's alert
 * fires (docs/alerting.png is made so), after seeding six hours of history.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { createServer } from "node:http";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { create } from "@bufbuild/protobuf";
import { Histogram, Registry } from "prom-client";
import { type RequestLog, RequestLogSchema, WriteRequestSchema } from "../gen/reqlog/v1/log_service_pb.js";
import { createLogServiceClient, type LogServiceClient } from "../src/client/log-service-client.js";
import { createMetrics } from "../src/metrics/metrics.js";
import { durationBoundsSeconds, durationName, requestLabelNames, sizeBoundsBytes, sizeName } from "../src/metrics/request-metrics.js";
import { defaultLimits } from "../src/limits.js";
import type { FinishedRequest } from "../src/store/store.js";
import { prepareRequestLog } from "../src/write/prepare-request-log.js";
import { statsFactsOf } from "../src/write/stats-facts.js";
import { startAlertmanager, startWebhookReceiver } from "../test/helpers/alertmanager.js";
import { launchChromium } from "../test/helpers/browser.js";
import { shortenedRules, startPrometheus } from "../test/helpers/prometheus.js";
import { startChildServer } from "./harness/child-server.js";
import { readCpuProfile, sumProfile } from "./harness/cpu-profile.js";
import { reqlogTarget, serveReqlog, stopReqlog, writeEachMeasured } from "./harness/peer-compare.js";
import { benchDbPath, median, trafficRecords } from "./load.js";

const { values: args } = parseArgs({
  options: {
    records: { type: "string", default: "400000" },
    series: { type: "string", default: "5000" },
    bursts: { type: "string", default: "5" },
    screenshot: { type: "string" },
    parts: { type: "string", default: "1,2,3" },
  },
});

/** 1. Write-path cost: with the request metrics and without (twice: how far two equal sides differ), and the counting alone. */
async function writeCost(records: number): Promise<void> {
  console.log(`\n1. Write-path cost of the request metrics: ${records.toLocaleString()} forge records at 1,000 a call, 4 in flight, three sides alternating`);
  // Every record counted (the bench's records ended in 2026-11: older than the default --metrics-max-age).
  // The side counting them in the middle: the sides run in turn, first to last then back, and the first and last
  // places fare differently on a loaded machine (first: +8.0%, middle: +0.8%, last: -2.1% in three runs of one build).
  const sides = [
    { name: "--no-request-metrics", server: await serveReqlog("metrics-off", ["--no-request-metrics"]) },
    { name: "request metrics on", server: await serveReqlog("metrics-on", ["--metrics-max-age", "0"]) },
    { name: "--no-request-metrics, again", server: await serveReqlog("metrics-off-2", ["--no-request-metrics"]) },
  ];
  try {
    const figures = await writeEachMeasured(sides.map((s) => reqlogTarget(s.server.address, s.server)), records, 1000, 4, 42);
    const text = await (await fetch(`http://${sides[1]!.server.httpAddress}/metrics`)).text();
    const counted = text
      .split("\n")
      .filter((l) => l.startsWith(`${durationName}_count{`))
      .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
    sides.forEach((side, i) => {
      const f = figures[i]!;
      console.log(`   ${side.name.padEnd(28)} ${Math.round(f.rate).toLocaleString()} records/s, server CPU ${f.cpuPerRecord!.toFixed(2)} µs a record`);
    });
    const [off, on, again] = figures.map((f) => f.cpuPerRecord!) as [number, number, number];
    const base = (off + again) / 2;
    console.log(`   request metrics: ${(on - base).toFixed(2)} µs a record = ${((100 * (on - base)) / base).toFixed(1)}% of the sides without (goal ≤ 3%); ` +
      `the two equal sides differ by ${((100 * Math.abs(off - again)) / base).toFixed(1)}%; ${counted.toLocaleString()} finished requests counted`);
  } finally {
    for (const side of sides) await stopReqlog(side.server);
  }

  // The counting alone: what the server's observer does per finished request, timed in this process.
  const finished: FinishedRequest[] = [];
  for (const log of trafficRecords(100_000, 7)) {
    if (!log.finished) continue;
    const prepared = prepareRequestLog(log, defaultLimits, "log");
    finished.push({ log: prepared.log, facts: statsFactsOf(prepared.log), maxLevel: -1 });
  }
  const writes = createMetrics({ openTails: () => 0 }, { maxSeriesPerApp: 2000 }).writes!;
  const batches: FinishedRequest[][] = [];
  for (let i = 0; i < finished.length; i += 1000) batches.push(finished.slice(i, i + 1000));
  for (const b of batches) writes.finished(b); // series made, code warm
  const runs: number[] = [];
  for (let run = 0; run < 7; run++) {
    const started = process.cpuUsage();
    for (const b of batches) writes.finished(b);
    const used = process.cpuUsage(started);
    runs.push((used.user + used.system) / finished.length);
  }
  console.log(`   the counting alone (this process, median of 7 passes over ${finished.length.toLocaleString()} finished requests): ${median(runs).toFixed(3)} µs a request`);
  await profiledCost(Math.min(records, 200_000));
}

/**
 * The request metrics' share of the server's own work, from a CPU profile of
 * a server counting them: the time under CommittedWrites (the writers' notes
 * and the observers told at each commit, i.e. the counting) over the main
 * thread's busy time. Unlike the A/B above it does not drift with the load:
 * both figures are of one thread in one run (a descheduled thread's samples
 * inflate both alike). An upper bound of the share of a stored record, whose
 * decoding is partly on other threads.
 */
async function profiledCost(records: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "reqlog-alerting-profile-"));
  try {
    const server = await serveReqlog("metrics-profiled", ["--metrics-max-age", "0"], undefined, ["--cpu-prof", `--cpu-prof-dir=${dir}`]);
    const [figures] = await writeEachMeasured([reqlogTarget(server.address, server)], records, 1000, 4, 43);
    await stopReqlog(server);
    // The main thread's profile: node names it CPU.<date>.<time>.<pid>.<thread id 0>.<n>.cpuprofile.
    const main = readdirSync(dir).find((f) => /^CPU\.\d+\.\d+\.\d+\.0\.\d+\.cpuprofile$/.test(f));
    if (main === undefined) throw new Error(`no main-thread profile in ${dir}`);
    const sums = sumProfile(readCpuProfile(join(dir, main)));
    const busy = sums.total - sums.idle;
    const notes = [...sums.underFunction].filter(([name]) => name.includes("store/committed-writes.js:")).reduce((sum, [, us]) => sum + us, 0);
    console.log(
      `   profiled (${records.toLocaleString()} records, one server counting them, server CPU ${figures!.cpuPerRecord!.toFixed(2)} µs a record): ` +
        `CommittedWrites ${(notes / 1000).toFixed(0)} ms of the main thread's ${(busy / 1000).toFixed(0)} ms busy = ${((100 * notes) / busy).toFixed(2)}% (goal ≤ 3%)`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A finished request of app forge on route N with status S, latency L µs, ending now. */
function record(i: number, route: string, status: number, latencyUs: number, endUsec = BigInt(Date.now()) * 1000n): RequestLog {
  return create(RequestLogSchema, {
    appId: "forge",
    versionId: "v1",
    requestId: new TextEncoder().encode(`b${i}-${Math.random().toString(36).slice(2)}`),
    ip: "10.0.0.1",
    startTime: endUsec - BigInt(latencyUs),
    endTime: endUsec,
    latency: BigInt(latencyUs),
    mcycles: 0n,
    combined: "",
    method: "GET",
    resource: route,
    urlMapEntry: route,
    httpVersion: "HTTP/1.1",
    status,
    responseSize: BigInt(500 + (i % 5000)),
  });
}

async function timeGet(url: string): Promise<number> {
  const started = performance.now();
  const response = await fetch(url);
  await response.arrayBuffer();
  return performance.now() - started;
}

/** 2. A scrape of /metrics with `target` samples. */
async function scrape(target: number): Promise<void> {
  console.log(`\n2. A scrape of /metrics with ${target.toLocaleString()} series (samples, as Prometheus counts them)`);
  const server = await serveReqlog("scrape", ["--metrics-max-age", "0"]);
  const registry = new Registry();
  const peerDuration = new Histogram({ name: durationName, help: "d", labelNames: [...requestLabelNames], buckets: [...durationBoundsSeconds], registers: [registry] });
  const peerSize = new Histogram({ name: sizeName, help: "s", labelNames: [...requestLabelNames], buckets: [...sizeBoundsBytes], registers: [registry] });
  const peer = createServer((_request, response) => {
    void registry.metrics().then((text) => response.end(text));
  });
  await new Promise<void>((resolve) => peer.listen(0, "127.0.0.1", resolve));
  const peerUrl = `http://127.0.0.1:${(peer.address() as { port: number }).port}/metrics`;
  try {
    const url = `http://${server.httpAddress}/metrics`;
    const samples = async () => (await (await fetch(url)).text()).split("\n").filter((l) => l !== "" && !l.startsWith("#")).length;
    // Label sets (routes × statuses) until the scrape holds `target` samples.
    let sets = 0;
    for (let have = await samples(); have < target; have = await samples()) {
      // Each label set adds 27 samples (15 + 2 of the duration histogram, 8 + 2 of the size one): close in on the target.
      const batch: RequestLog[] = [];
      for (let i = 0; i < Math.min(200, Math.max(1, Math.floor((target - have) / 27))); i++, sets++) {
        const route = `/api/v1/route${Math.floor(sets / 3)}`;
        const status = [200, 404, 500][sets % 3]!;
        batch.push(record(sets, route, status, 1000 + ((sets * 7919) % 3_000_000)));
        const labels = { app: "forge", module: "default", version: "v1", http_route: route, http_request_method: "GET", http_response_status_code: String(status) };
        peerDuration.observe(labels, (1000 + ((sets * 7919) % 3_000_000)) / 1e6);
        peerSize.observe(labels, 500 + (sets % 5000));
      }
      await server.client.write(create(WriteRequestSchema, { log: batch }));
    }
    const n = await samples();
    const peerSamples = (await (await fetch(peerUrl)).text()).split("\n").filter((l) => l !== "" && !l.startsWith("#")).length;
    const times = { reqlog: [] as number[], peer: [] as number[] };
    for (let i = 0; i < 60; i++) {
      // Sides alternate which goes first.
      if (i % 2 === 0) {
        times.reqlog.push(await timeGet(url));
        times.peer.push(await timeGet(peerUrl));
      } else {
        times.peer.push(await timeGet(peerUrl));
        times.reqlog.push(await timeGet(url));
      }
    }
    const r = median(times.reqlog);
    const p = median(times.peer);
    const cpuBefore = server.cpuMicros();
    for (let i = 0; i < 60; i++) await timeGet(url);
    const cpu = (server.cpuMicros() - cpuBefore) / 60 / 1000;
    console.log(`   reqlog GET /metrics: ${n.toLocaleString()} samples (${sets.toLocaleString()} label sets of the two histograms, and the process's own), median of 60: ${r.toFixed(1)} ms (goal ≤ 20 ms); the server's CPU per scrape ${cpu.toFixed(1)} ms`);
    console.log(`   prom-client, the same two histograms' series (${peerSamples.toLocaleString()} samples), served the same way: ${p.toFixed(1)} ms; reqlog ${(r / p).toFixed(2)}× its time`);
  } finally {
    peer.close();
    await stopReqlog(server);
  }
}

/** Forge routes the bursts fail on, one each (a route's alert is a group of its own in Alertmanager). */
const burstRoutes = [
  "/api/v1/repos/{owner}/{repo}/commits",
  "/api/v1/repos/{owner}/{repo}/branches",
  "/api/v1/admin/hooks/{id}",
  "/api/v1/repos/{owner}/{repo}/compare/{basehead}",
  "/api/v1/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/zip",
];

/** 3. From a 5xx burst to the webhook, once per route; with --screenshot, the dashboard while the last fires. */
async function burstToWebhook(bursts: number, screenshot: string | undefined): Promise<void> {
  console.log(`\n3. From a 5xx burst to Alertmanager's webhook (scrape and rules every 1 s, group_wait 1 s), ${bursts} bursts`);
  const hook = await startWebhookReceiver();
  const am = await startAlertmanager({ webhook: hook.url });
  const reqlog = await startChildServer([
    "--db", benchDbPath("alerting"), "--listen", "127.0.0.1:0", "--sync", "normal",
    "--alertmanager-url", am.url, "--alertmanager-poll-interval", "1s",
  ]);
  process.once("exit", () => reqlog.process.kill("SIGKILL"));
  const client: LogServiceClient = createLogServiceClient({ server: reqlog.address });
  const prometheus = await startPrometheus({ targets: [reqlog.httpAddress], rules: { "reqlog-rules.yml": shortenedRules() }, alertmanager: am.url });
  let serial = 0;
  const write = (logs: RequestLog[]) => client.write(create(WriteRequestSchema, { log: logs }));
  try {
    if (screenshot) {
      // Six hours of history (stored late: in Stats and Usage, not in the metrics), so the charts have a shape.
      const now = Date.now() * 1000;
      for (let i = 0; i < 6000; i += 500) {
        await write(Array.from({ length: 500 }, (_, k) => {
          const j = i + k;
          const end = BigInt(Math.round(now - 6 * 3600e6 + (j / 6000) * 6 * 3600e6));
          return record(serial++, `/api/v1/teams/{id}`.replace("{id}", String(j % 40)), j % 37 === 0 ? 500 : 200, 5000 + (j % 60) * 1500, end);
        }));
      }
    }
    const latencies: number[] = [];
    for (let b = 0; b < bursts; b++) {
      const route = burstRoutes[b % burstRoutes.length]!;
      let failing = false;
      const traffic = setInterval(() => {
        void write([record(serial++, route, 200, 20_000), record(serial++, route, 200, 25_000), ...(failing ? [record(serial++, route, 500, 30_000), record(serial++, route, 503, 15_000)] : [])]);
      }, 100);
      // Until Prometheus has the route's traffic (a rate needs two scrapes).
      for (;;) {
        const rate = await prometheus.query(`app_route:http_server_requests:rate5m{http_route="${route}"}`);
        if (rate.length > 0 && rate[0]!.value > 0) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      await write([record(serial++, route, 500, 30_000)]);
      const burst = Date.now();
      failing = true;
      const fired = await hook.next((n) => n.status === "firing" && n.commonLabels.http_route === route, 120_000);
      latencies.push((fired.receivedAt - burst) / 1000);
      console.log(`   burst ${b + 1}: ${latencies.at(-1)!.toFixed(1)} s`);
      if (screenshot && b === bursts - 1) {
        await new Promise((r) => setTimeout(r, 1500)); // reqlog reads Alertmanager every second
        const browser = await launchChromium();
        const page = await browser.newPage({ viewport: { width: 1400, height: 1100 } });
        await page.goto(`http://${reqlog.httpAddress}/?app=forge&range=6h`);
        await page.locator('[data-testid="alert"]').first().waitFor();
        await page.locator('[data-testid="chart-errors"][data-state="ready"] canvas').waitFor();
        await new Promise((r) => setTimeout(r, 500));
        mkdirSync(dirname(screenshot), { recursive: true });
        await page.screenshot({ path: screenshot });
        await browser.close();
        console.log(`   screenshot: ${screenshot}`);
      }
      failing = false;
      clearInterval(traffic);
      await hook.next((n) => n.status === "resolved" && n.commonLabels.http_route === route, 120_000).catch(() => undefined);
    }
    const sorted = [...latencies].sort((a, b) => a - b);
    console.log(`   min ${sorted[0]!.toFixed(1)} s, median ${median(latencies).toFixed(1)} s, max ${sorted.at(-1)!.toFixed(1)} s (goal ≤ 1 + 1 + 2 = 4 s)`);
  } finally {
    client.close();
    await prometheus.stop();
    await am.stop();
    await hook.close();
    await reqlog.stop();
  }
}

async function main() {
  console.log(`alerting bench, ${new Date().toISOString()}, load ${loadavg().map((l) => l.toFixed(1)).join(" ")}`);
  const parts = new Set(args.parts.split(","));
  if (parts.has("1")) await writeCost(Number(args.records));
  if (parts.has("2")) await scrape(Number(args.series));
  if (parts.has("3")) await burstToWebhook(Number(args.bursts), args.screenshot);
  console.log(`\nload at the end: ${loadavg().map((l) => l.toFixed(1)).join(" ")}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

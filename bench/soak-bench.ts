/**
 * Memory under a sustained mixed load: one `reqlog serve` (its own process,
 * default flags: `--sync full`, two read workers) takes, for a while:
 *
 * - two writers, each a Write call every 100 ms, together `rate` records a
 *   second of forge traffic timed as now; one record in ten is first written
 *   in progress and rewritten finished in its writer's next call (10%
 *   rewrites);
 * - a reader walking a regex Read three pages deep (100 a page, a pattern no
 *   index narrows), over and over;
 * - Usage (hourly per version) and Stats (hourly, with top lists) every second.
 *
 * The server's resident set size is sampled every second and printed every
 * `every` seconds with what was acknowledged, split as Linux counts it
 * (anonymous memory: the JS heaps and SQLite's page caches; file pages
 * mapped: the program, its libraries and SQLite's WAL index); at the end,
 * the peak, the peaks of the first and last quarter, the errors, whether
 * Usage counts every request acknowledged, and the server's CPU time. With
 * `history`, that many requests of older forge traffic are stored first (in this process,
 * before the server starts), or the server starts on a copy of that
 * database file, so the soak meets a store whose indexes outgrow the page
 * caches from its first minute, as a long-lived one does.
 *   npm run bench:soak -- [seconds] [records/s] [every] [history: requests or a file]     (defaults 1440, 2000, 30, 0)
 */
import { copyFileSync, readFileSync, rmSync } from "node:fs";
import { dirname } from "node:path";
import { clone } from "@bufbuild/protobuf";
import { type RequestLog, RequestLogSchema } from "../gen/reqlog/v1/log_service_pb.js";
import { createLogServiceClient } from "../src/client/log-service-client.js";
import { forgeTraffic } from "./forge-traffic.js";
import { startChildServer } from "./harness/child-server.js";
import { benchDbPath, loadBackend } from "./load.js";
import { unindexablePattern } from "./search-patterns.js";

const seconds = Number(process.argv[2] ?? 1440);
const rate = Number(process.argv[3] ?? 2000);
const every = Number(process.argv[4] ?? 30);
const history = process.argv[5] ?? "0";
const callMs = 100;
const writers = 2;

/** A process's resident set (MB): in all, anonymous memory, file pages mapped (Linux's /proc/PID/status). */
function residentMb(pid: number): { rss: number; anon: number; file: number } {
  const lines = readFileSync(`/proc/${pid}/status`, "utf8").split("\n");
  const mb = (key: string) => Number(lines.find((l) => l.startsWith(`${key}:`))!.split(/\s+/)[1]) / 1024;
  return { rss: mb("VmRSS"), anon: mb("RssAnon"), file: mb("RssFile") + mb("RssShmem") };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A record as first written while in progress: no end yet. */
function inProgress(log: RequestLog): RequestLog {
  const copy = clone(RequestLogSchema, log);
  copy.finished = false;
  copy.endTime = 0n;
  copy.latency = 0n;
  return copy;
}

async function main() {
  const path = benchDbPath("soak");
  if (!/^\d+$/.test(history)) {
    copyFileSync(history, path);
  } else if (Number(history) > 0) {
    const { backend } = await loadBackend(path, Number(history));
    await backend.close();
  }
  const server = await startChildServer(["--listen", "127.0.0.1:0", "--db", path]);
  const pid = server.process.pid!;
  await sleep(1000);
  const idle = residentMb(pid).rss;
  const client = createLogServiceClient({ server: server.address });
  const apps = ["forge", "forge-staging", "pages"];
  /** Requests Usage counts in all the soak's apps: the older ones first, then those and the soak's. */
  const countedNow = async () => {
    let counted = 0;
    for (const appId of apps) counted += Number((await client.usage({ appId, combineVersions: true, resolutionHours: 0 })).summary?.count ?? 0n);
    return counted;
  };
  const older = await countedNow();
  const startUsec = BigInt(Date.now()) * 1000n;
  const until = Date.now() + seconds * 1000;
  const counts = { acknowledged: 0, rewrites: 0, reads: 0, usage: 0, stats: 0, errors: 0 };
  const errors = new Map<string, number>();
  const failed = (err: unknown) => {
    counts.errors++;
    const text = err instanceof Error ? err.message : String(err);
    errors.set(text, (errors.get(text) ?? 0) + 1);
  };

  async function writer(w: number): Promise<void> {
    const perCall = Math.max(1, Math.round((rate / writers) * (callMs / 1000)));
    // Time moves at the writers' pace: `rate` requests a second in all.
    const traffic = forgeTraffic({ seed: 100 + w, startUsec, gapUsec: (1e6 * writers) / rate, total: Number.MAX_SAFE_INTEGER, inProgressWindow: 0 });
    let pending: RequestLog[] = [];
    let i = 0;
    for (let call = 0, next = Date.now(); Date.now() < until; call++) {
      const batch = pending;
      pending = [];
      for (let k = 0; k < perCall; k++, i++) {
        const log = traffic.next().value as RequestLog;
        if (i % 10 === 0) {
          batch.push(inProgress(log));
          pending.push(log);
        } else {
          batch.push(log);
        }
      }
      try {
        await client.write({ log: batch });
        counts.acknowledged += batch.length;
        counts.rewrites += batch.length - perCall;
      } catch (err) {
        failed(err);
      }
      next += callMs;
      await sleep(Math.max(0, next - Date.now()));
    }
    if (pending.length > 0) {
      await client.write({ log: pending }).then(() => (counts.acknowledged += pending.length, counts.rewrites += pending.length), failed);
    }
  }

  async function reader(): Promise<void> {
    while (Date.now() < until) {
      let offset: Uint8Array | undefined;
      for (let page = 0; page < 3; page++) {
        try {
          const reply = await client.read({
            appId: "forge", count: 100n, includeIncomplete: true, combinedLogRegex: unindexablePattern,
            ...(offset ? { offset: { requestId: offset } } : {}),
          });
          counts.reads++;
          offset = reply.offset?.requestId;
          if (!offset) break;
        } catch (err) {
          failed(err);
          break;
        }
      }
    }
  }

  async function rollups(): Promise<void> {
    while (Date.now() < until) {
      const now = BigInt(Date.now()) * 1000n;
      await client.usage({ appId: "forge", startTime: Number(startUsec / 1_000_000n), endTime: Number(now / 1_000_000n) + 3600 })
        .then(() => counts.usage++, failed);
      await client.stats({ appId: "forge", startTime: startUsec, endTime: now + 3_600_000_000n, topN: 10 })
        .then(() => counts.stats++, failed);
      await sleep(1000);
    }
  }

  const samples: number[] = [];
  const began = Date.now();
  const cpuBefore = server.cpuMicros();
  console.log(`soak: ${seconds} s, ${rate.toLocaleString()} records/s from ${writers} writers (10% rewrites), regex Reads 3 pages deep, Usage and Stats every second` +
    (history === "0" ? "" : `, on a store of ${/^\d+$/.test(history) ? `${Number(history).toLocaleString()} older requests` : `a copy of ${history}`}`));
  console.log(`RSS idle ${idle.toFixed(0)} MB`);
  console.log("| s | records acknowledged | RSS (MB) | anonymous (MB) | files mapped (MB) | peak so far (MB) |");
  console.log("|---:|---:|---:|---:|---:|---:|");
  const sampler = setInterval(() => {
    const now = residentMb(pid);
    samples.push(now.rss);
    if (samples.length % every === 0) {
      const s = Math.round((Date.now() - began) / 1000);
      console.log(`| ${s} | ${counts.acknowledged.toLocaleString()} | ${now.rss.toFixed(0)} | ${now.anon.toFixed(0)} | ${now.file.toFixed(0)} | ${Math.max(...samples).toFixed(0)} |`);
    }
  }, 1000);
  await Promise.all([...Array.from({ length: writers }, (_, w) => writer(w)), reader(), rollups()]);
  clearInterval(sampler);

  // Every request acknowledged counts once in Usage (rewrites are the same requests).
  const counted = (await countedNow()) - older;
  const requests = counts.acknowledged - counts.rewrites;
  const cpuMicros = server.cpuMicros() - cpuBefore;
  client.close();
  await server.stop();
  rmSync(dirname(path), { recursive: true, force: true });

  const quarter = Math.max(1, Math.floor(samples.length / 4));
  const peak = Math.max(...samples);
  console.log(`\n${requests.toLocaleString()} requests acknowledged (${counts.rewrites.toLocaleString()} rewrites), ` +
    `${counts.reads.toLocaleString()} regex pages, ${counts.usage} Usage and ${counts.stats} Stats calls, ${counts.errors} errors`);
  for (const [text, n] of errors) console.log(`  error ×${n}: ${text}`);
  console.log(`server CPU ${(cpuMicros / 1e6).toFixed(1)} s, all threads (${(cpuMicros / Math.max(1, counts.acknowledged)).toFixed(1)} µs a record acknowledged, Reads, Usage and Stats included)`);
  console.log(`Usage counts ${counted.toLocaleString()} requests: ${counted === requests ? "every one acknowledged, once" : "NOT the requests acknowledged"}`);
  console.log(`RSS idle ${idle.toFixed(0)} MB, peak ${peak.toFixed(0)} MB (goal ≤ 300 MB: ${peak <= 300 ? "met" : "not met"}); ` +
    `peak in the first quarter ${Math.max(...samples.slice(0, quarter)).toFixed(0)} MB, in the last ${Math.max(...samples.slice(-quarter)).toFixed(0)} MB`);
  process.exit(counts.errors === 0 && counted === requests ? 0 : 1);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

/**
 * Middleware overhead: requests/s of a hello-world node:http server with and
 * without reqlog's requestLogger in front, measured with autocannon in the
 * same run, rounds alternating which side goes first.
 *   npm run bench:middleware -- [seconds per side per round] [rounds] [app lines per request] [--parts] [--rate N]
 *   (defaults 10 s, 5 rounds, 0 lines)
 * --rate N holds autocannon to N requests/s (its -R) instead of as many as
 * it can: the servers' CPU per request at a load reqlog keeps up with.
 * --parts adds two more sides, to show where the cost goes: the handler run
 * in a request scope only (AsyncLocalStorage), and the middleware with
 * reqlog down (capturing and encoding, nothing sent: the buffer drops).
 *
 * Each server runs in a process of its own, as does autocannon. The
 * middleware sends every request to a real `reqlog serve` (a child process
 * at nice 19: on these two cores it would otherwise take the CPU the app
 * needs, where in production reqlog runs on a machine of its own; when it
 * falls behind, the SDK's buffer holds what it can and drops the oldest,
 * counted below). Besides requests/s it prints each side's CPU time per
 * request, measured in the server's process: the middleware's own cost.
 */
import { type ChildProcess, fork, spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { LoggerStats } from "../src/sdk/batching-logger.js";
import { startChildServer } from "./harness/child-server.js";
import { freePort } from "../test/helpers/local-process.js";
import { benchDbPath, median } from "./load.js";

const seconds = Number(process.argv[2] ?? 10);
const rounds = Number(process.argv[3] ?? 5);
const lines = Number(process.argv[4] ?? 0);
const parts = process.argv.includes("--parts");
const rateAt = process.argv.indexOf("--rate");
const fixedRate = rateAt > 0 ? Number(process.argv[rateAt + 1]) : undefined;
const connections = 50;

const autocannonBin = join(dirname(createRequire(import.meta.url).resolve("autocannon/package.json")), "autocannon.js");
const appScript = join(dirname(fileURLToPath(import.meta.url)), "harness", "hello-app.js");

interface App {
  child: ChildProcess;
  url: string;
  ask(message: "stats" | "flush"): Promise<{ cpu: NodeJS.CpuUsage; requests?: number; sdk?: LoggerStats }>;
}

async function startApp(args: string[]): Promise<App> {
  const child = fork(appScript, args, { stdio: ["ignore", "pipe", "inherit", "ipc"] });
  const port = await new Promise<number>((resolve) => child.stdout!.once("data", (c: Buffer) => resolve(JSON.parse(c.toString()).port)));
  return {
    child,
    url: `http://127.0.0.1:${port}/`,
    ask: (message) =>
      new Promise((resolve) => {
        child.once("message", (reply) => resolve(reply as never));
        child.send(message);
      }),
  };
}

/** autocannon in a process of its own: requests/s over the run. */
function load(url: string): Promise<number> {
  const limit = fixedRate === undefined ? [] : ["-R", String(fixedRate)];
  const child = spawn(process.execPath, [autocannonBin, "-c", String(connections), "-d", String(seconds), ...limit, "-j", url], {
    stdio: ["ignore", "pipe", "ignore"],
  });
  let out = "";
  child.stdout.on("data", (c: Buffer) => (out += c.toString()));
  return new Promise((resolve, reject) =>
    child.once("close", () => {
      try {
        const result = JSON.parse(out) as { requests: { total: number }; duration: number; non2xx: number; errors: number };
        if (result.non2xx > 0 || result.errors > 0) throw new Error(`autocannon saw ${result.non2xx} non-2xx answers and ${result.errors} errors`);
        resolve(result.requests.total / result.duration);
      } catch (err) {
        reject(err);
      }
    }),
  );
}

/** One side's run: requests/s and the server's CPU µs per request. */
async function measure(app: App, drain: boolean): Promise<{ rate: number; cpuPerRequest: number }> {
  // What the last run left to send is sent before this one starts (not with reqlog down: it never would be).
  if (drain) await app.ask("flush");
  const before = await app.ask("stats");
  const rate = await load(app.url);
  const after = await app.ask("stats");
  const cpu = after.cpu.user + after.cpu.system - before.cpu.user - before.cpu.system;
  return { rate, cpuPerRequest: cpu / (rate * seconds) };
}

type Side = "plain" | "scope" | "down" | "logged";
const labels: Record<Side, string> = {
  plain: "without the middleware (baseline)",
  scope: "handler in a request scope only",
  down: "requestLogger, reqlog down",
  logged: "with requestLogger → reqlog",
};

async function main() {
  const reqlog = await startChildServer(["--db", benchDbPath("middleware"), "--listen", "127.0.0.1:0", "--http-listen", "off", "--sync", "normal"]);
  spawn("renice", ["-n", "19", "-p", String(reqlog.process.pid)], { stdio: "ignore" });
  const sides: Side[] = parts ? ["plain", "scope", "down", "logged"] : ["plain", "logged"];
  const apps: Record<Side, App> = {
    plain: await startApp(["plain"]),
    scope: await startApp(["scope"]),
    down: await startApp(["logged", `127.0.0.1:${await freePort()}`, String(lines)]),
    logged: await startApp(["logged", reqlog.address, String(lines)]),
  };
  const rates: Record<Side, number[]> = { plain: [], scope: [], down: [], logged: [] };
  const cpus: Record<Side, number[]> = { plain: [], scope: [], down: [], logged: [] };
  const held = fixedRate === undefined ? "" : ` -R ${fixedRate}`;
  console.log(`hello-world node:http, autocannon -c ${connections} -d ${seconds}${held}, ${rounds} rounds, ${lines} app lines a request:`);
  for (let round = 1; round <= rounds; round++) {
    const order = round % 2 === 1 ? sides : [...sides].reverse();
    const figures = {} as Record<Side, { rate: number; cpuPerRequest: number }>;
    for (const side of order) {
      figures[side] = await measure(apps[side], side !== "down");
      rates[side].push(figures[side].rate);
      cpus[side].push(figures[side].cpuPerRequest);
    }
    const shown = order.map((side) => `${side} ${Math.round(figures[side].rate).toLocaleString()} req/s (${figures[side].cpuPerRequest.toFixed(1)} µs CPU/req)`);
    console.log(`  round ${round}: ${shown.join(", ")}; logged/plain ${(figures.logged.rate / figures.plain.rate).toFixed(3)}x`);
  }
  const sdk = (await apps.logged.ask("flush")).sdk!;
  const down = (await apps.down.ask("stats")).sdk!;
  const base = median(rates.plain);
  console.log(`median of ${rounds} rounds:`);
  for (const side of sides) {
    const rate = median(rates[side]);
    const ratio = side === "plain" ? "" : `   ${(rate / base).toFixed(3)}x (overhead ${((1 - rate / base) * 100).toFixed(1)}%)`;
    console.log(`  ${labels[side].padEnd(36)} ${Math.round(rate).toLocaleString().padStart(7)} req/s, ${median(cpus[side]).toFixed(1)} µs CPU a request${ratio}`);
  }
  console.log(
    `  SDK: ${sdk.acknowledged.records.toLocaleString()} records acknowledged by reqlog, ${sdk.dropped.records.toLocaleString()} dropped (buffer full), ` +
      `${sdk.refused.records} refused, ${sdk.failures} stream failures` +
      (parts ? `; with reqlog down: ${down.buffered.records.toLocaleString()} held, ${down.dropped.records.toLocaleString()} dropped` : ""),
  );
  for (const app of Object.values(apps)) app.child.disconnect();
  await reqlog.stop();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

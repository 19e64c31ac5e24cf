/**
 * The attacks of issue 23 (docs/security.md) together, against one
 * `reqlog serve` (its own process, default flags and limits, tokens on),
 * while two writers store forge traffic:
 *
 * - far-future end times written, then open-ended daily Stats, some
 *   cancelled after 20 ms (item 1);
 * - Connect Tails over HTTP/1.1 whose client stops reading and then
 *   disconnects, and more gRPC Tails than one token may hold (item 2);
 * - silent TCP connections and trickled HTTP/1.1 headers on both ports
 *   (item 3);
 * - app lines piled onto a few requests up to their cap, and Reads of them
 *   (item 4);
 * - Reads with heavy and ever-new RE2 patterns (item 5);
 * - `reqlog import` of a file with a 3 MB line (item 6);
 * - bodies on the HTTP port that do not decode, JSON that is not UTF-8, a
 *   gzip bomb, negative status and response sizes (items 8-10).
 *
 * Each second the server's RSS is sampled and its health asked; every
 * `--every` seconds a row is printed. At the end: whether every write that
 * was acknowledged is stored (each id read back), whether a Tail still
 * opens, how each attack was answered, and any INTERNAL or UNKNOWN answer
 * (there should be none). Exits 1 if the server died, a write is missing,
 * a Tail cannot open or a call was answered INTERNAL/UNKNOWN.
 *   npm run bench:attack-soak -- [--minutes N] [--every S]     (defaults 10, 30)
 */
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { setMaxListeners } from "node:events";
import { connect as connectTcp, type Socket } from "node:net";
import { dirname, join } from "node:path";
import { gzipSync } from "node:zlib";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { LogLineSchema, type RequestLog } from "../gen/reqlog/v1/log_service_pb.js";
import { createLogServiceClient } from "../src/client/log-service-client.js";
import { forgeTraffic } from "./forge-traffic.js";
import { runCli, startChildServer } from "./harness/child-server.js";
import { createHealthClient } from "./harness/health-client.js";
import { benchDbPath } from "./load.js";

function flag(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const value = Number(process.argv[i + 1]);
  if (!(value > 0)) throw new Error(`--${name} needs a number above 0, e.g. --${name} ${fallback}`);
  return value;
}

const minutes = flag("minutes", 10);
const every = flag("every", 30);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function rssMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"))!;
  return Number(line.split(/\s+/)[1]) / 1024;
}

/** How each attack's calls were answered: code name → count, per attack. */
const outcomes = new Map<string, Map<string, number>>();
function note(attack: string, outcome: string): void {
  const counts = outcomes.get(attack) ?? new Map<string, number>();
  counts.set(outcome, (counts.get(outcome) ?? 0) + 1);
  outcomes.set(attack, counts);
}
/** Answers that say the server failed, not the caller: there should be none. */
const serverFailures: string[] = [];
function answered(attack: string, err: unknown): void {
  const code = err === undefined ? "OK" : Code[ConnectError.from(err).code] ?? "?";
  note(attack, code);
  if (code === "Internal" || code === "Unknown") serverFailures.push(`${attack}: ${ConnectError.from(err).message}`);
}
const call = (attack: string, p: Promise<unknown>) => p.then(() => answered(attack, undefined), (err) => answered(attack, err));

/** Forge records (every required field set), made the attacker's: app "evil", this id, these fields. */
const evilTraffic = forgeTraffic({ seed: 23, startUsec: BigInt(Date.now()) * 1000n - 3_600_000_000n, gapUsec: 1000, total: Number.MAX_SAFE_INTEGER, inProgressWindow: 0 });
function evilRecord(requestId: string, fields: Partial<Pick<RequestLog, "endTime" | "line">> = {}): RequestLog {
  const log = evilTraffic.next().value as RequestLog;
  return Object.assign(log, { appId: "evil", requestId: Buffer.from(requestId), ...fields });
}

async function token(db: string, ...args: string[]): Promise<string> {
  const made = await runCli(["token", "create", "--db", db, ...args]);
  const found = /rql_\S+/.exec(made.stdout);
  if (!found) throw new Error(`token create failed: ${made.stderr}`);
  return found[0];
}

function openSocket(address: string): Promise<Socket> {
  const port = Number(address.slice(address.lastIndexOf(":") + 1));
  return new Promise((resolve, reject) => {
    const socket = connectTcp(port, "127.0.0.1", () => resolve(socket));
    socket.once("error", reject);
  });
}

function envelope(message: Uint8Array): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
}

async function main() {
  const db = benchDbPath("attack-soak");
  const admin = await token(db, "--scope", "admin");
  const writerToken = await token(db, "--scope", "write:logs", "--app", "forge");
  const attackerToken = await token(db, "--scope", "admin", "--app", "evil");
  const server = await startChildServer(["--listen", "127.0.0.1:0", "--db", db]);
  const pid = server.process.pid!;
  const http = `http://${server.httpAddress}`;
  const checker = createLogServiceClient({ server: server.address, token: admin });
  const attacker = createLogServiceClient({ server: server.address, token: attackerToken });
  const health = createHealthClient(server.address);
  await sleep(1000);
  const idle = rssMb(pid);
  const until = Date.now() + minutes * 60_000;
  const running = () => Date.now() < until;
  let died = false;
  void server.exited.then(() => (died = true));

  // Writers: every id acknowledged is read back at the end.
  const acknowledged: string[] = [];
  async function writer(w: number): Promise<void> {
    const client = createLogServiceClient({ server: server.address, token: writerToken });
    const traffic = forgeTraffic({ seed: 7 + w, startUsec: BigInt(Date.now()) * 1000n - 60_000_000n, gapUsec: 1000, total: Number.MAX_SAFE_INTEGER, inProgressWindow: 0 });
    for (let n = 0; running(); n++) {
      const batch = Array.from({ length: 20 }, (_, i) => {
        const log = traffic.next().value as RequestLog;
        log.appId = "forge";
        log.requestId = Buffer.from(`w${w}-${n}-${i}`);
        return log;
      });
      try {
        await client.write({ log: batch });
        for (const log of batch) acknowledged.push(Buffer.from(log.requestId).toString());
      } catch (err) {
        answered("writes (must all be OK)", err);
      }
      await sleep(100);
    }
    client.close();
  }

  // 1: a far-future end time, then open-ended Stats, some cancelled.
  async function futureStats(): Promise<void> {
    for (let n = 0; running(); n++) {
      await call("1 far-future write", attacker.write({ log: [evilRecord(`future-${n}`, { endTime: 2n ** 63n - 1n })] }));
      await call("1 evil write", attacker.write({ log: [evilRecord(`e-${n}`)] }));
      const signal = n % 2 === 0 ? AbortSignal.timeout(20) : undefined;
      await call("1 open-ended Stats", attacker.stats({ appId: "evil", startTime: 0n, resolutionHours: 24 }, { signal }));
      await sleep(200);
    }
  }

  // 2: stalled Connect Tails that disconnect; more gRPC Tails than a token may hold.
  async function stalledTail(): Promise<void> {
    const body = envelope(Buffer.from(JSON.stringify({ appId: "evil" })));
    while (running()) {
      const socket = await openSocket(server.httpAddress).catch(() => undefined);
      if (!socket) {
        note("2 stalled HTTP Tail", "connect failed");
        await sleep(500);
        continue;
      }
      socket.on("error", () => {});
      socket.write(
        "POST /reqlog.v1.LogService/Tail HTTP/1.1\r\nHost: x\r\nContent-Type: application/connect+json\r\n" +
          `Authorization: Bearer ${attackerToken}\r\nConnect-Protocol-Version: 1\r\nContent-Length: ${body.length}\r\n\r\n`,
      );
      socket.write(body);
      socket.pause();
      await sleep(3000);
      socket.destroy();
      note("2 stalled HTTP Tail", "opened, stalled, dropped");
    }
  }
  async function tailQuota(): Promise<void> {
    while (running()) {
      const abort = new AbortController();
      setMaxListeners(32, abort.signal);
      const tails = Array.from({ length: 20 }, () => {
        const stream = attacker.tail({ appId: "evil" }, { signal: abort.signal });
        return stream[Symbol.asyncIterator]().next().then(
          () => note("2 Tails past the token's quota", "OK"),
          (err: unknown) => (abort.signal.aborted ? note("2 Tails past the token's quota", "held until cancelled") : answered("2 Tails past the token's quota", err)),
        );
      });
      await sleep(2000);
      abort.abort();
      await Promise.all(tails);
      await sleep(1000);
    }
  }

  // 3: silent connections and trickled headers on both ports.
  async function slowConnections(): Promise<void> {
    while (running()) {
      const sockets: Socket[] = [];
      for (const address of [server.address, server.httpAddress]) {
        for (let i = 0; i < 100; i++) {
          const socket = await openSocket(address).catch(() => undefined);
          if (!socket) {
            note("3 idle connections", "refused at connect");
            continue;
          }
          socket.on("error", () => {});
          socket.once("close", () => note("3 idle connections", "closed by the server"));
          sockets.push(socket);
          if (i % 10 === 0 && address === server.httpAddress) socket.write("GET /metrics HTTP/1.1\r\n"); // headers that never end
        }
      }
      await sleep(15_000);
      for (const s of sockets) s.destroy();
    }
  }

  // 4: app lines piled onto a few requests, then those requests read.
  async function bigRequests(): Promise<void> {
    const message = "x".repeat(60 * 1024);
    for (let n = 0; running(); n++) {
      const id = `heavy-${n % 4}`;
      const now = BigInt(Date.now()) * 1000n;
      const line = Array.from({ length: 40 }, (_, i) => create(LogLineSchema, { time: now + BigInt(i), level: 2, logMessage: message }));
      await call("4 app lines past the request's cap", attacker.write({ log: [evilRecord(id, { line })] }));
      await call("4 Read of heavy requests", attacker.read({ appId: "evil", requestId: [0, 1, 2, 3].map((k) => Buffer.from(`heavy-${k}`)) }));
      await sleep(500);
    }
  }

  // 5: heavy patterns, and a new pattern every call.
  async function regexReads(): Promise<void> {
    for (let n = 0; running(); n++) {
      await call("5 costly pattern", attacker.read({ appId: "evil", combinedLogRegex: `(?i)(\\pL|\\pN|\\pP){190}N${n}` }));
      await call("5 a new pattern each call", attacker.read({ appId: "evil", combinedLogRegex: `[a-z]{${n % 50}}q${n}(x|y)+` }));
    }
  }

  // 6: an access log with a 3 MB line, imported.
  async function longLineImport(): Promise<void> {
    const file = join(dirname(db), "long-line.log");
    const line = (i: number) => {
      const t = new Date(Date.now() - 60_000);
      const stamp = `${String(t.getUTCDate()).padStart(2, "0")}/${t.toLocaleString("en", { month: "short", timeZone: "UTC" })}/${t.getUTCFullYear()}:${t.toISOString().slice(11, 19)} +0000`;
      return `10.0.0.${i % 250} - - [${stamp}] "GET /import/${i} HTTP/1.1" 200 ${i} "-" "soak"\n`;
    };
    for (let n = 0; running(); n++) {
      writeFileSync(file, `${Array.from({ length: 100 }, (_, i) => line(i)).join("")}${"y".repeat(3_000_000)}\n${line(100)}`);
      const run = await runCli(["import", "--server", server.address, "--token", attackerToken, "--app", "evil", "--json", file]);
      const summary = /"records":\s*(\d+)/.exec(run.stdout)?.[1];
      note("6 import with a 3 MB line", `exit ${run.code}, ${summary ?? "?"} of 101 stored`);
      await sleep(10_000);
    }
  }

  // 8-10: bad bodies on the HTTP port.
  async function badBodies(): Promise<void> {
    const post = async (attack: string, method: string, body: Uint8Array, headers: Record<string, string>) => {
      try {
        const response = await fetch(`${http}/reqlog.v1.LogService/${method}`, {
          method: "POST", body, headers: { authorization: `Bearer ${attackerToken}`, ...headers },
        });
        const reply = (await response.json()) as { code?: string };
        note(attack, `${response.status} ${reply.code ?? "ok"}`);
        if (response.status >= 500) serverFailures.push(`${attack}: HTTP ${response.status}`);
      } catch (err) {
        note(attack, `failed: ${(err as Error).message}`);
      }
    };
    // 40 MiB of JSON in ~40 KiB: past twice max-message-bytes once decompressed.
    const bomb = gzipSync(Buffer.from(JSON.stringify({ appId: "evil", combinedLogRegex: "a".repeat(40 * 1024 * 1024) })));
    const notUtf8 = Buffer.concat([Buffer.from('{"appId":"ev'), Buffer.from([0xff]), Buffer.from('il"}')]);
    const negative = (field: string) =>
      Buffer.from(JSON.stringify({ log: [{ appId: "evil", versionId: "v1", requestId: Buffer.from("neg").toString("base64"), startTime: String(Date.now() * 1000), method: "GET", resource: "/", [field]: -1 }] }));
    while (running()) {
      await post("8 protobuf that does not decode", "Read", new Uint8Array([0x0a, 5, 0x61]), { "content-type": "application/proto" });
      await post("9 JSON that is not UTF-8", "Read", notUtf8, { "content-type": "application/json" });
      await post("10 gzip bomb", "Read", bomb, { "content-type": "application/json", "content-encoding": "gzip" });
      await post("10 negative status", "Write", negative("status"), { "content-type": "application/json" });
      await post("10 negative response_size", "Write", negative("responseSize"), { "content-type": "application/json" });
      await sleep(100);
    }
  }

  // A Tail a well-behaved reader opens: it must always get a slot.
  let probes = 0;
  async function tailOpens(): Promise<boolean> {
    const abort = new AbortController();
    const first = checker.tail({ appId: "forge" }, { signal: abort.signal })[Symbol.asyncIterator]().next();
    // Something to follow (the writers may have stopped): a record written once the Tail is open.
    await sleep(300);
    await checker.write({ log: [Object.assign(evilRecord(`probe-${probes++}`), { appId: "forge" })] }).catch(() => {});
    const ok = await Promise.race([first.then(() => true, () => false), sleep(10_000).then(() => false)]);
    abort.abort();
    await first.catch(() => {});
    return ok;
  }

  const samples: { rss: number; healthMs: number }[] = [];
  let healthFailures = 0;
  const began = Date.now();
  console.log(`attack soak: ${minutes} min, issue 23's attacks together, 2 writers (20 records a call, a call every 100 ms at most), one server with default flags and tokens`);
  console.log(`RSS idle ${idle.toFixed(0)} MB`);
  console.log("| s | writes acknowledged | RSS (MB) | peak so far (MB) | slowest health in the last rows (ms) | a Tail opens |");
  console.log("|---:|---:|---:|---:|---:|---|");
  let windowHealth = 0;
  const sampler = (async () => {
    while (running() && !died) {
      const started = performance.now();
      const ok = await Promise.race([health.check({}).then(() => true, () => false), sleep(5000).then(() => false)]);
      const healthMs = performance.now() - started;
      if (!ok) healthFailures++;
      windowHealth = Math.max(windowHealth, healthMs);
      samples.push({ rss: died ? 0 : rssMb(pid), healthMs });
      if (samples.length % every === 0) {
        const s = Math.round((Date.now() - began) / 1000);
        const tail = await tailOpens();
        console.log(`| ${s} | ${acknowledged.length.toLocaleString()} | ${samples.at(-1)!.rss.toFixed(0)} | ${Math.max(...samples.map((x) => x.rss)).toFixed(0)} | ${windowHealth.toFixed(0)} | ${tail ? "yes" : "NO"} |`);
        windowHealth = 0;
      }
      await sleep(Math.max(0, 1000 - healthMs));
    }
  })();

  await Promise.all([writer(0), writer(1), futureStats(), stalledTail(), tailQuota(), slowConnections(), bigRequests(), regexReads(), longLineImport(), badBodies(), sampler]);

  // Every acknowledged write, read back by id.
  let missing = 0;
  if (!died) {
    for (let i = 0; i < acknowledged.length; i += 100) {
      const ids = acknowledged.slice(i, i + 100);
      const read = await checker.read({ appId: "forge", requestId: ids.map((id) => Buffer.from(id)), includeIncomplete: true });
      const found = new Set(read.log.map((l) => Buffer.from(l.requestId).toString()));
      missing += ids.filter((id) => !found.has(id)).length;
    }
  }
  const tailAfter = !died && (await tailOpens());
  const diedDuring = died;
  checker.close();
  attacker.close();
  health.close();
  const exit = diedDuring ? await server.exited : await server.stop();

  const peak = Math.max(...samples.map((x) => x.rss));
  const quarter = Math.max(1, Math.floor(samples.length / 4));
  const healthSorted = samples.map((x) => x.healthMs).sort((a, b) => a - b);
  console.log("\nHow each attack was answered:");
  for (const [attack, counts] of [...outcomes].sort()) {
    console.log(`  ${attack}: ${[...counts].map(([code, n]) => `${code} ×${n.toLocaleString()}`).join(", ")}`);
  }
  console.log(`\nserver ${diedDuring ? `DIED (${exit.code ?? exit.signal})` : "alive to the end"}; ${serverFailures.length} INTERNAL/UNKNOWN answers`);
  for (const failure of serverFailures.slice(0, 10)) console.log(`  ${failure}`);
  console.log(`${acknowledged.length.toLocaleString()} writes acknowledged, ${missing} missing when read back by id`);
  console.log(`a Tail opens after the soak: ${tailAfter ? "yes" : "NO"}`);
  console.log(`health: ${samples.length} checks, ${healthFailures} failed or over 5 s, median ${healthSorted[Math.floor(healthSorted.length / 2)]!.toFixed(0)} ms, slowest ${healthSorted.at(-1)!.toFixed(0)} ms`);
  console.log(`RSS idle ${idle.toFixed(0)} MB, peak ${peak.toFixed(0)} MB; peak in the first quarter ${Math.max(...samples.slice(0, quarter).map((x) => x.rss)).toFixed(0)} MB, in the last ${Math.max(...samples.slice(-quarter).map((x) => x.rss)).toFixed(0)} MB`);
  rmSync(dirname(db), { recursive: true, force: true });
  process.exit(diedDuring || missing > 0 || !tailAfter || serverFailures.length > 0 ? 1 : 0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { afterAll, describe, expect, it } from "vitest";
import { LogLineSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { mainScript, runCli, startChildServer } from "../../bench/harness/child-server.js";
import { defaultLimits, type LimitName, limitEnv, limitFlag, limitNames, limitSpecs } from "../../src/limits.js";
import { Code } from "../../src/reqlog-error.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { callError, createTestClient, failureOf, type TestClient } from "../helpers/test-client.js";
import { readQueryAnswer } from "../../src/client/query-answer.js";

const dir = mkdtempSync(join(tmpdir(), "reqlog-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [mainScript, ...args], { env: { ...process.env, ...env }, encoding: "utf8" });
}

describe("reqlog serve", () => {
  it("takes its address and database from REQLOG_* variables and stops cleanly on SIGTERM", async () => {
    const db = join(dir, "env.db");
    const server = await startChildServer([], { REQLOG_LISTEN: "127.0.0.1:0", REQLOG_DB: db });
    expect(server.address).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(server.stderr()).toContain(`"db":${JSON.stringify(db)}`);
    expect(await server.stop()).toEqual({ code: 0, signal: null });
    expect(server.stderr()).toContain('"msg":"stopped"');
  });

  it("serves the HTTP port where --http-listen says, and none with off (flag or variable)", async () => {
    const on = await startChildServer(["--listen", "127.0.0.1:0", "--db", join(dir, "http.db"), "--http-listen", "127.0.0.1:0"]);
    expect(on.httpAddress).toMatch(/^127\.0\.0\.1:\d+$/);
    const metrics = await fetch(`http://${on.httpAddress}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await on.stop()).toEqual({ code: 0, signal: null });
    for (const [args, env] of [[["--http-listen", "off"], {}], [[], { REQLOG_HTTP_LISTEN: "off" }]] as const) {
      const off = await startChildServer(["--listen", "127.0.0.1:0", "--db", join(dir, "http.db"), ...args], env);
      expect(off.httpAddress).toBe("off");
      expect(await off.stop()).toEqual({ code: 0, signal: null });
    }
  });

  it("refuses a non-loopback HTTP address without tokens too", () => {
    const result = run(["serve", "--listen", "127.0.0.1:0", "--http-listen", "0.0.0.0:0", "--db", join(dir, "x.db")]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("refusing to listen on 0.0.0.0:0: a non-loopback address needs access tokens");
  });

  it("refuses a non-loopback address without tokens, naming the way out", () => {
    const result = run(["serve", "--listen", "0.0.0.0:0", "--db", join(dir, "x.db")]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("refusing to listen on 0.0.0.0:0: a non-loopback address needs access tokens");
    expect(result.stderr).toContain("--allow-remote-without-auth");
  });

  it("rejects a malformed limit with the flag's name", () => {
    const result = run(["serve", "--max-line-bytes", "lots"]);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain("--max-line-bytes: \"lots\" is not a whole number ≥ 1");
  });

  it("lists every limit in its help, with its default and environment variable", () => {
    const help = run(["serve", "--help"]).stdout.replace(/\s+/g, " ");
    expect(help).toContain("--max-line-bytes <n> limit: bytes of one app log line's message (default: 65536, env: REQLOG_MAX_LINE_BYTES)");
    for (const name of limitNames) {
      const spec = limitSpecs[name];
      expect(help).toContain(`--${limitFlag(name)} <n> limit: ${spec.description} (default: ${spec.default}, env: ${limitEnv(name)})`);
    }
  });
});

/**
 * How a limit shows that the server runs with a given value: a value other
 * than the default, and a check that fails under the default.
 */
interface Probe {
  value: number;
  check(client: TestClient): Promise<void>;
  /** The server needs an access token (the rate limit counts per token). */
  token?: boolean;
}

/** The call is refused over the limit, with the limit's code and its message naming the value in force. */
async function expectOver(call: Promise<unknown>, name: LimitName, value: number) {
  const refused = await callError(call);
  expect(refused.code).toBe(Code[limitSpecs[name].code]);
  expect(refused.details).toMatch(new RegExp(`, over the limit ${limitFlag(name)}=${value}(:|$)`));
}

/** With one Tail open, a second is refused over a limit of 1. */
async function expectSecondTailOver(client: TestClient, name: LimitName) {
  const first = new AbortController();
  const inPlace = new Promise<void>((resolve) => {
    const tail = client.tail({ appId: "forge" }, { signal: first.signal, onHeader: () => resolve() });
    tail[Symbol.asyncIterator]().next().catch(() => undefined);
  });
  try {
    await inPlace;
    const second = client.tail({ appId: "forge" })[Symbol.asyncIterator]().next();
    await expectOver(second, name, 1);
  } finally {
    first.abort();
  }
}

const writeOf = (...logs: Parameters<typeof minimalLog>[0][]) => ({ log: logs.map((l) => minimalLog(l)) });
/** `count` app lines of one record, at t0, t0+1…, each with `message`. */
const appLines = (count: number, message = "m") =>
  Array.from({ length: count }, (_, i) => create(LogLineSchema, { time: t0 + BigInt(i), level: 1, logMessage: message }));

/** Writes n records, r0 (oldest) … r{n-1}, 1000 per Write. */
async function writeMany(client: TestClient, n: number) {
  for (let i = 0; i < n; i += 1000) {
    const ids = Array.from({ length: Math.min(1000, n - i) }, (_, j) => i + j);
    await client.write(writeOf(...ids.map((k) => ({ requestId: rid(`r${k}`), endTime: t0 + BigInt(k) }))));
  }
}

const probes: Record<LimitName, Probe> = {
  maxMessageBytes: {
    value: 4096,
    // Between the limit and twice it, the service's own check answers (beyond, grpc-js refuses the bytes).
    check: (client) => expectOver(client.write(writeOf({ userAgent: "x".repeat(5000) })), "maxMessageBytes", 4096),
  },
  maxRecordsPerWrite: {
    value: 2,
    check: (client) => expectOver(client.write(writeOf({ requestId: rid("a") }, { requestId: rid("b") }, { requestId: rid("c") })), "maxRecordsPerWrite", 2),
  },
  maxLinesPerFlush: {
    value: 2,
    check: (client) => expectOver(client.write(writeOf({ line: appLines(3) })), "maxLinesPerFlush", 2),
  },
  maxLineBytes: {
    value: 10,
    check: (client) => expectOver(client.write(writeOf({ line: appLines(1, "x".repeat(11)) })), "maxLineBytes", 10),
  },
  maxRequestLines: {
    value: 2,
    check: (client) => expectOver(client.write(writeOf({ line: appLines(3) })), "maxRequestLines", 2),
  },
  maxRequestLineBytes: {
    value: 10,
    check: (client) => expectOver(client.write(writeOf({ line: appLines(1, "x".repeat(11)) })), "maxRequestLineBytes", 10),
  },
  maxFutureSeconds: {
    value: 60,
    check: (client) => {
      // Two minutes ahead of the server's clock: within a day, past 60 s.
      const soon = BigInt(Date.now()) * 1000n + 120_000_000n;
      return expectOver(client.write(writeOf({ startTime: soon - 1000n, endTime: soon })), "maxFutureSeconds", 60);
    },
  },
  maxStatusBytes: {
    value: 5,
    check: (client) =>
      expectOver(client.setStatus({ status: "running" }, { headers: { "reqlog-app-id": "forge", "reqlog-version-id": "v1" } }), "maxStatusBytes", 5),
  },
  maxRegexBytes: {
    value: 3,
    check: (client) => expectOver(client.read({ appId: "forge", combinedLogRegex: "abcd" }), "maxRegexBytes", 3),
  },
  maxRegexCost: {
    value: 100,
    check: (client) => expectOver(client.read({ appId: "forge", combinedLogRegex: "a{200}" }), "maxRegexCost", 100),
  },
  readScanRows: {
    value: 5,
    async check(client) {
      await writeMany(client, 20);
      // No record has a CRITICAL line: the scan stops past its 5 rows (r19 … r15) at r14, and says where.
      const page = await client.read({ appId: "forge", minimumLogLevel: 4, count: 10n });
      expect(page.log).toEqual([]);
      expect(page.offset).toBeDefined();
      expect(page.lastEndTime).toBe(t0 + 14n);
      // A query the scan budget stops answers from the newest rows it examined, and says so rather than cutting silently.
      const answer = await readQueryAnswer(client.query({ appId: "forge", query: "* | fields request_id" }));
      const scanned = Number(answer.summary?.scanned);
      expect(answer.summary?.partial).toBe(
        `partial: scanned ${scanned} of 20 requests (read-scan-rows=5, read-scan-ms=${defaultLimits.readScanMs}): narrow _time for a whole answer`,
      );
      expect(scanned).toBeLessThan(20);
      expect(answer.rows.slice(0, 5)).toEqual([["r19"], ["r18"], ["r17"], ["r16"], ["r15"]]);
    },
  },
  readScanMs: {
    value: 1,
    async check(client) {
      // A full scan of these rows takes tens of ms; 1 ms ends it within a few hundred.
      await writeMany(client, 5000);
      const page = await client.read({ appId: "forge", combinedLogRegex: "(a+)+$", count: 10n });
      expect(page.offset).toBeDefined();
      expect(page.lastEndTime).toBeGreaterThan(t0);
    },
  },
  maxReadBytes: {
    value: 1000,
    async check(client) {
      const line = [create(LogLineSchema, { time: t0, level: 1, logMessage: "x".repeat(600) })];
      await client.write(writeOf(...["a", "b", "c"].map((id, i) => ({ requestId: rid(id), endTime: t0 + BigInt(i), line }))));
      // 600 bytes of lines each: one record a page under 1000 bytes.
      const page = await client.read({ appId: "forge", count: 3n, includeAppLogs: true });
      expect(page.log.map((l) => new TextDecoder().decode(l.requestId))).toEqual(["c"]);
      expect(page.offset).toBeDefined();
    },
  },
  maxUsageRecords: {
    value: 3,
    check: (client) => expectOver(client.usage({ appId: "forge", startTime: 0, endTime: 4 * 3600, resolutionHours: 1 }), "maxUsageRecords", 3),
  },
  maxStatsRecords: {
    value: 3,
    check: (client) => expectOver(client.stats({ appId: "forge", startTime: 0n, endTime: 4n * 3600n }), "maxStatsRecords", 3),
  },
  maxQueryBytes: {
    value: 10,
    check: (client) => expectOver(readQueryAnswer(client.query({ appId: "forge", query: "method:GET status:500" })), "maxQueryBytes", 10),
  },
  maxQueryRows: {
    value: 3,
    async check(client) {
      await writeMany(client, 5);
      const answer = await readQueryAnswer(client.query({ appId: "forge", query: "* | fields request_id" }));
      expect(answer.rows).toEqual([["r4"], ["r3"], ["r2"]]);
      expect(answer.summary?.partial).toBe("partial: the answer has more than 3 rows (max-query-rows=3): add | limit N");
    },
  },
  maxQueryGroups: {
    value: 2,
    async check(client) {
      await client.write(writeOf(...[200, 404, 500].map((status, i) => ({ requestId: rid(`g${i}`), endTime: t0 + BigInt(i), status }))));
      await expectOver(readQueryAnswer(client.query({ appId: "forge", query: "* | stats by (status) count()" })), "maxQueryGroups", 2);
    },
  },
  maxTails: { value: 1, check: (client) => expectSecondTailOver(client, "maxTails") },
  maxTailsPerToken: { value: 1, token: true, check: (client) => expectSecondTailOver(client, "maxTailsPerToken") },
  rateLimit: {
    value: 3,
    token: true,
    async check(client) {
      // Sent at once: the fourth within the same second finds the token's bucket empty.
      const outcomes = await Promise.allSettled(Array.from({ length: 4 }, () => client.read({ appId: "forge" })));
      const refused = outcomes.flatMap((o) => (o.status === "rejected" ? [failureOf(o.reason)] : []));
      expect(refused.length).toBeGreaterThan(0);
      for (const r of refused) {
        expect(r.code).toBe(Code.RESOURCE_EXHAUSTED);
        expect(r.details).toMatch(/^rate limit of 3 calls\/s for this token exceeded: retry in \d+ ms \(limit rate-limit=3\)$/);
      }
    },
  },
};

/** A `reqlog serve` child with one limit set by its flag or its environment variable, and a client of it. */
async function serveWith(name: LimitName, via: "flag" | "env", probe: Probe) {
  const db = join(dir, `${name}-${via}.db`);
  const token = probe.token ? (await runCli(["token", "create", "--db", db, "--scope", "admin"])).stdout.trim() : undefined;
  const value = String(probe.value);
  const server = await startChildServer(
    ["--listen", "127.0.0.1:0", "--db", db, ...(via === "flag" ? [`--${limitFlag(name)}`, value] : [])],
    via === "env" ? { [limitEnv(name)]: value } : {},
  );
  const client = createTestClient({ server: server.address, token });
  return {
    client,
    // The server stops first: a connection closed just before SIGTERM can hold its drain until the shutdown timeout.
    async stop() {
      expect(await server.stop()).toEqual({ code: 0, signal: null });
      client.close();
    },
  };
}

// Every limit in limits.ts, so that a limit added there without a way to set it fails here.
describe.concurrent("every limit takes effect from its flag and from its environment variable", () => {
  const cases = limitNames.flatMap((name) => [[name, "flag"], [name, "env"]] as const);
  it.each(cases)("%s from its %s", async (name, via) => {
    const probe = probes[name];
    expect(probe, `no probe shows ${name} in effect: add one to \`probes\``).toBeDefined();
    expect(probe.value).not.toBe(limitSpecs[name].default);
    const served = await serveWith(name, via, probe);
    try {
      await probe.check(served.client);
    } finally {
      await served.stop();
    }
  });
});

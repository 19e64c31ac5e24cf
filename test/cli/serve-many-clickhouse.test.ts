import { migrations as clickhouseMigrations } from "../../src/store/clickhouse/migrations/index.js";
import { create } from "@bufbuild/protobuf";
import { readFileSync } from "node:fs";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { createReqlogClient } from "reqlog/client";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { LogLineSchema, LogService, type RequestLog } from "../../gen/reqlog/v1/log_service_pb.js";
import { packageRoot } from "../../src/package-root.js";
import { type ClickHouseServer, startClickHouse } from "../helpers/clickhouse-server.js";
import { startDnsServer } from "../helpers/dns-server.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { lenientService } from "../helpers/lenient-schema.js";
import { freePort } from "../helpers/local-process.js";
import { type NginxServer, startNginxSite } from "../helpers/nginx.js";
import { eventually, idOf, readAll } from "../helpers/read-all.js";
import { type ReqlogServers, startReqlogServers } from "../helpers/reqlog-servers.js";
import type { ChildServer } from "../../bench/harness/child-server.js";
import { createTestClient, type TestClient } from "../helpers/test-client.js";

// Starting ClickHouse may first install it (apt-get); a killed server's slot is closed after 10 s.
vi.setConfig({ hookTimeout: 600_000, testTimeout: 240_000 });

let clickhouse: ClickHouseServer;
beforeAll(async () => {
  clickhouse = await startClickHouse({ name: "reqlog-serve-many-" });
});
afterAll(async () => {
  await clickhouse?.stop();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A client whose calls go to the servers in turn: each Read page through the next server. */
function hopping(servers: ReqlogServers, count: number): Pick<TestClient, "read"> {
  let turn = 0;
  return { read: (request, options) => servers.client(turn++ % count).read(request, options) };
}

/** Request ids of a paged read, with how often each came. */
function repeats(logs: readonly RequestLog[]): string[] {
  const seen = new Map<string, number>();
  for (const log of logs) seen.set(idOf(log), (seen.get(idOf(log)) ?? 0) + 1);
  return [...seen].filter(([, n]) => n > 1).map(([id, n]) => `${id} ×${n}`);
}

/** `text` with `from` (which must be there) replaced by `to`. */
function replaced(text: string, from: string, to: string): string {
  if (!text.includes(from)) throw new Error(`docs/scale-out.md's nginx config no longer holds "${from}": update this test with it`);
  return text.replaceAll(from, to);
}

/**
 * The nginx config docs/scale-out.md shows (its nginx block, as a user copies it), with reqlog-a and
 * reqlog-b made the two servers' addresses and its two ports free ports on loopback.
 */
function nginxSiteOfDocs(servers: ReqlogServers, ports: { grpc: number; http: number }): string {
  const doc = readFileSync(`${packageRoot()}/docs/scale-out.md`, "utf8");
  const block = /```nginx\n([\s\S]*?)```/.exec(doc);
  if (!block) throw new Error("docs/scale-out.md has no nginx block");
  const [a, b] = servers.servers;
  let site = block[1]!;
  site = replaced(site, "reqlog-a:50051", a!.address);
  site = replaced(site, "reqlog-b:50051", b!.address);
  site = replaced(site, "reqlog-a:8080", a!.httpAddress);
  site = replaced(site, "reqlog-b:8080", b!.httpAddress);
  site = replaced(site, "listen 50051", `listen 127.0.0.1:${ports.grpc}`);
  site = replaced(site, "listen 8080", `listen 127.0.0.1:${ports.http}`);
  return site;
}

/** Records a server has stored (its reqlog_records_written_total on /metrics). */
async function recordsWritten(server: ChildServer): Promise<number> {
  const text = await (await fetch(`http://${server.httpAddress}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith("reqlog_records_written_total "));
  return Number(line?.split(" ")[1]);
}

/**
 * An SDK client of `server` (the two servers as a list, or one name of both) sends 3,000 records while
 * server 0 is killed (SIGKILL) after the first 1,000 are acknowledged: every record is stored once, and
 * Usage counts each once. Says how many records each server stored (server 0 until it was killed).
 * Stops the servers.
 */
async function sdkKeepsSending(servers: ReqlogServers, server: string | string[]): Promise<{ killed: number; survivor: number }> {
  const reqlog = createReqlogClient({
    server,
    app: "forge",
    flushIntervalMs: 10,
    maxBatchRecords: 100,
    retry: { initialMs: 20, maxMs: 200 },
  });
  try {
    const total = 3000;
    let sent = 0;
    const sendSome = (n: number) => {
      for (const end = Math.min(total, sent + n); sent < end; sent++) {
        const start = t0 + BigInt(sent) * 1000n;
        reqlog.send({ requestId: `req-${sent}`, startTime: start, endTime: start + 800n, method: "GET", resource: `/r/${sent}`, status: 200 });
      }
    };
    while (reqlog.stats().acknowledged.records < 1000) {
      sendSome(30);
      await sleep(2);
    }
    // The first stream went to the first server, and a stream stays on its server while records come: kill it.
    const killed = await recordsWritten(servers.servers[0]!);
    await servers.kill(0);
    while (sent < total) {
      sendSome(30);
      await sleep(2);
    }
    await reqlog.flush({ timeoutMs: 60_000 });
    expect(reqlog.stats()).toMatchObject({ dropped: { records: 0 }, refused: { records: 0 }, acknowledged: { records: expect.any(Number) } });

    const survivor = servers.client(1);
    const logs = await eventually(async () => {
      const all = await readAll(survivor, "forge");
      return all.length === total ? all : undefined;
    }, `${total} records`, 60_000);
    expect(repeats(logs)).toEqual([]);
    expect((await survivor.usage({ appId: "forge" })).summary?.count).toBe(BigInt(total));
    return { killed, survivor: await recordsWritten(servers.servers[1]!) };
  } finally {
    await reqlog.close({ timeoutMs: 1000 }).catch(() => undefined);
    await servers.stop();
  }
}

describe("three reqlog servers on one ClickHouse database", () => {
  it("store every acknowledged record exactly once while one is killed (SIGKILL) and restarted mid-writes", async () => {
    const database = `reqlog_many_${process.pid}`;
    const servers = await startReqlogServers(3, { url: clickhouse.url, database });
    try {
      // Started at once on an empty database: one of them migrated it, each migration once.
      const applied = await clickhouse.client.query({ query: `SELECT version, count() AS n FROM ${database}.schema_migrations GROUP BY version ORDER BY version`, format: "JSONEachRow" });
      expect(await applied.json()).toEqual(clickhouseMigrations.map(({ version }) => ({ version, n: "1" })));
      const written = new Map<string, boolean>(); // id → finished
      let turn = 0;
      /** Writes a batch through the next server, and again through the next while it fails (as a client would). */
      async function writeAcked(logs: RequestLog[], via?: number): Promise<void> {
        for (let attempt = 0; ; attempt++) {
          const i = via !== undefined && attempt === 0 ? via : turn++ % 3;
          try {
            await servers.client(i).write({ log: logs });
            return;
          } catch {
            await sleep(20);
          }
        }
      }
      const batch = (round: number, finished: boolean) =>
        Array.from({ length: 40 }, (_, j) => {
          const id = `r${round}-${j}`;
          const end = t0 + BigInt(round * 40 + j) * 1000n;
          return minimalLog(
            finished
              ? { requestId: rid(id), endTime: end, status: j % 7 === 0 ? 503 : 200, line: [create(LogLineSchema, { time: end, level: 1, logMessage: `done ${id}` })] }
              : { requestId: rid(id), startTime: end - 500n, endTime: 0n, finished: false, line: [create(LogLineSchema, { time: end - 400n, level: 1, logMessage: `started ${id}` })] },
          );
        });

      const pagesDuring: RequestLog[][] = [];
      for (let round = 0; round < 30; round++) {
        // Every other round starts its requests through one server and finishes them through the next.
        if (round % 2 === 0) {
          await writeAcked(batch(round, false), round % 3);
          await writeAcked(batch(round, true), (round + 1) % 3);
        } else {
          await writeAcked(batch(round, true));
        }
        for (let j = 0; j < 40; j++) written.set(`r${round}-${j}`, true);
        if (round === 10) {
          // A write in flight to server 1 when it dies: the client sends it again elsewhere.
          const inFlight = writeAcked(batch(100, true), 1);
          await sleep(5);
          await servers.kill(1);
          await inFlight;
          for (let j = 0; j < 40; j++) written.set(`r100-${j}`, true);
        }
        if (round === 20) await servers.restart(1);
        if (round % 5 === 4) pagesDuring.push(await readAll(hopping(servers, round < 10 || round >= 20 ? 3 : 1), "forge"));
      }

      // Each paged Read made while writes went on (its pages through every server) saw each record once.
      for (const logs of pagesDuring) expect(repeats(logs)).toEqual([]);

      // Afterwards, through any server: every record once, finished, with its lines; Usage counts them.
      const expected = [...written.keys()].sort();
      const all = await eventually(async () => {
        const logs = await readAll(hopping(servers, 3), "forge");
        return logs.length === expected.length ? logs : undefined;
      }, `a paged read of ${expected.length} records`, 60_000);
      expect(repeats(all)).toEqual([]);
      expect(all.map(idOf).sort()).toEqual(expected);
      expect(all.filter((l) => !l.finished).map(idOf)).toEqual([]);
      const started = all.filter((l) => l.line.some((line) => line.logMessage.startsWith("started")));
      expect(started.length).toBe(15 * 40);
      expect(started.every((l) => l.line.map((line) => line.logMessage.split(" ")[0]).join() === "started,done")).toBe(true);
      for (let i = 0; i < 3; i++) {
        const usage = await servers.client(i).usage({ appId: "forge" });
        expect(usage.summary?.count).toBe(BigInt(expected.length));
      }
    } finally {
      await servers.stop();
    }
  });

  it("lose nothing when the SDK's server is killed mid-stream: it sends on to the other", async () => {
    const servers = await startReqlogServers(2, { url: clickhouse.url, database: `reqlog_sdk_failover_${process.pid}` });
    const written = await sdkKeepsSending(servers, servers.servers.map((s) => s.address));
    expect(written.killed).toBeGreaterThan(0);
    expect(written.survivor).toBeGreaterThan(0);
  });

  it("lose nothing when one of the servers a DNS name resolves to is killed: the SDK sends on to the other address", async () => {
    // One name, two A records (127.0.0.1, 127.0.0.2), one port: what a DNS name of every server gives a client.
    const port = await freePort();
    const dns = await startDnsServer({ "reqlog.test": ["127.0.0.1", "127.0.0.2"] });
    const servers = await startReqlogServers(2, { url: clickhouse.url, database: `reqlog_sdk_dns_${process.pid}` }, [], (i) => `127.0.0.${i + 1}:${port}`);
    try {
      const written = await sdkKeepsSending(servers, `dns://${dns.address}/reqlog.test:${port}`);
      // The name was asked of the DNS server, and both of its addresses stored records: one name, two servers.
      expect(dns.queries()).toContain("reqlog.test");
      expect(written.killed).toBeGreaterThan(0);
      expect(written.survivor).toBeGreaterThan(0);
    } finally {
      await dns.stop();
    }
  });

  it("answer the HTTP API through nginx configured as docs/scale-out.md shows, one of them killed", async () => {
    const servers = await startReqlogServers(2, { url: clickhouse.url, database: `reqlog_nginx_${process.pid}` });
    const ports = { grpc: await freePort(), http: await freePort() };
    let nginx: NginxServer | undefined;
    try {
      nginx = await startNginxSite(nginxSiteOfDocs(servers, ports), ports.http);
      // Connect's JSON over HTTP/1.1, what a browser or curl sends.
      const http = createClient(lenientService(LogService), createConnectTransport({ baseUrl: nginx.url, httpVersion: "1.1" }));
      const write = async (id: string, i: number) =>
        (await http.write({ log: [minimalLog({ requestId: rid(id), startTime: t0 + BigInt(i) * 1000n, endTime: t0 + BigInt(i) * 1000n + 500n })] })).records;
      const ids = Array.from({ length: 20 }, (_, i) => `n${String(i).padStart(2, "0")}`);
      for (let i = 0; i < 10; i++) expect(await write(ids[i]!, i)).toBe(1);
      // nginx sent the calls to each server in turn.
      expect(await recordsWritten(servers.servers[0]!)).toBeGreaterThan(0);
      expect(await recordsWritten(servers.servers[1]!)).toBeGreaterThan(0);

      await servers.kill(0);
      // A refused connection is passed on to the other server: every call is answered.
      for (let i = 10; i < 20; i++) expect(await write(ids[i]!, i)).toBe(1);
      // The gRPC port of the same config, on the survivor.
      const grpc = createTestClient({ server: `127.0.0.1:${ports.grpc}` });
      try {
        expect((await grpc.write({ log: [minimalLog({ requestId: rid("g00"), startTime: t0, endTime: t0 + 500n })] })).records).toBe(1);
      } finally {
        grpc.close();
      }

      // A paged Read through nginx (4 a page) sees each record once; Usage as curl asks for it counts them.
      const expected = [...ids, "g00"].sort();
      const paged = await eventually(async () => {
        const logs: RequestLog[] = [];
        let offset: Uint8Array | undefined;
        do {
          const page = await http.read({ appId: "forge", count: 4n, ...(offset ? { offset: { requestId: offset } } : {}) });
          logs.push(...page.log);
          offset = page.offset?.requestId;
        } while (offset);
        return logs.length === expected.length ? logs : undefined;
      }, `a paged read of ${expected.length} records through nginx`, 60_000);
      expect(repeats(paged)).toEqual([]);
      expect(paged.map(idOf).sort()).toEqual(expected);
      const usage = await fetch(`${nginx.url}/reqlog.v1.LogService/Usage`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ appId: "forge" }),
      });
      expect(usage.status).toBe(200);
      expect(((await usage.json()) as { summary?: { count?: string } }).summary?.count).toBe(String(expected.length));
    } finally {
      await nginx?.stop();
      await servers.stop();
    }
  });
});

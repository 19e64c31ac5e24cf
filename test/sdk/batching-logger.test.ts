import { runInNewContext } from "node:vm";
import { setFlagsFromString } from "node:v8";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createReqlogClient, type ReqlogClient, type ReqlogClientOptions } from "reqlog/client";
import { afterEach, describe, expect, it, vi } from "vitest";
import { LogLineSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { freePort } from "../helpers/local-process.js";
import { idOf, readAll } from "../helpers/read-all.js";
import { startTestServer, type TestServer, useTestServer } from "../helpers/test-server.js";

const t0 = 1_795_000_000_000_000n;
const clients: ReqlogClient[] = [];
const servers: TestServer[] = [];

/**
 * Closes the test's clients, then the servers it started, after each test.
 * Called in a describe block after useTestServer, it runs before that
 * server stops (hooks run in reverse), so no stream holds the shutdown.
 */
function closeAfterEach(): void {
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.close({ timeoutMs: 100 }).catch(() => {});
    for (const s of servers.splice(0)) await s.close();
  });
}

function client(options: Omit<ReqlogClientOptions, "app"> & { app?: string }): ReqlogClient {
  const c = createReqlogClient({ app: "forge", version: "v1", ...options });
  clients.push(c);
  return c;
}

/** A request record numbered i, with `lines` app lines. */
const record = (c: ReqlogClient, i: number, lines = 3, message = "") =>
  c.record({
    requestId: `r${i}`,
    startTime: t0 + BigInt(i) * 1000n,
    endTime: t0 + BigInt(i) * 1000n + 500n,
    method: "GET",
    resource: `/api/v1/teams/${i}`,
    status: 200,
    line: Array.from({ length: lines }, (_, j) =>
      create(LogLineSchema, { time: t0 + BigInt(i) * 1000n + BigInt(j), level: j % 5, logMessage: `line ${j} of r${i}${message}` }),
    ),
  });

/** A port nothing listens on: reqlog is down. */
async function downServer(): Promise<string> {
  return `127.0.0.1:${await freePort()}`;
}

const stillPending = async (promise: Promise<unknown>, ms = 200) =>
  Promise.race([promise.then(() => "settled", () => "settled"), new Promise((resolve) => setTimeout(() => resolve("pending"), ms))]);

describe("the batching logger, with reqlog up", () => {
  const ts = useTestServer();
  closeAfterEach();

  it("sends full batches of maxBatchRecords, the rest on flush, and counts what was acknowledged", async () => {
    const c = client({ server: ts.server.address, maxBatchRecords: 10, flushIntervalMs: 60_000 });
    for (let i = 0; i < 25; i++) expect(c.send(record(c, i))).toBe(true);
    await c.flush({ timeoutMs: 5000 });
    const stats = c.stats();
    expect(stats.sent).toEqual({ batches: 3, records: 25, lines: 75 });
    expect(stats.acknowledged).toEqual({ batches: 3, records: 25, lines: 75 });
    expect(stats.buffered).toEqual({ records: 0, lines: 0, bytes: 0 });
    expect(stats.dropped).toEqual({ records: 0, lines: 0 });
    const stored = await readAll(ts.client, "forge");
    expect(stored.map(idOf).sort()).toEqual(Array.from({ length: 25 }, (_, i) => `r${i}`).sort());
    expect(stored.every((l) => l.line.length === 3 && l.versionId === "v1" && l.moduleId === "default")).toBe(true);
  });

  it("sends a batch that is not full flushIntervalMs after its first record, without a flush", async () => {
    const c = client({ server: ts.server.address, flushIntervalMs: 30 });
    c.send(record(c, 1));
    await vi.waitFor(() => expect(c.stats().acknowledged.records).toBe(1), { timeout: 5000 });
    expect(c.stats().sent.batches).toBe(1);
    expect((await readAll(ts.client, "forge")).map(idOf)).toEqual(["r1"]);
  });

  it("keeps a batch's estimated bytes under maxBatchBytes", async () => {
    const c = client({ server: ts.server.address, maxBatchBytes: 4000, flushIntervalMs: 60_000 });
    const big = " ".repeat(300);
    for (let i = 0; i < 20; i++) c.send(record(c, i, 3, big));
    await c.flush({ timeoutMs: 5000 });
    // Each record is about 1,200 bytes (three 300-character lines, 3 bytes a character at worst): 3 a batch.
    expect(c.stats().sent.batches).toBe(7);
    expect(await readAll(ts.client, "forge")).toHaveLength(20);
  });

  it("splits a batch the service refuses until only the record at fault is left out, and says why", async () => {
    const errors: string[] = [];
    const c = client({ server: ts.server.address, flushIntervalMs: 60_000, onError: (e) => errors.push(e.rawMessage) });
    for (let i = 0; i < 8; i++) c.send(i === 5 ? c.record({ requestId: "bad", startTime: t0, method: "", resource: "/" }) : record(c, i));
    await c.flush({ timeoutMs: 5000 });
    const stats = c.stats();
    expect(stats.refused).toEqual({ records: 1, lines: 0 });
    expect(stats.acknowledged.records).toBe(7);
    expect(errors).toContain("reqlog refused a record: log[0].method is empty");
    expect((await readAll(ts.client, "forge")).map(idOf).sort()).toEqual(["r0", "r1", "r2", "r3", "r4", "r6", "r7"]);
  });

  it("drains on close(), then takes nothing more", async () => {
    const c = client({ server: ts.server.address, flushIntervalMs: 60_000 });
    for (let i = 0; i < 500; i++) c.send(record(c, i));
    await c.close();
    expect(c.stats().acknowledged.records).toBe(500);
    expect(await readAll(ts.client, "forge")).toHaveLength(500);
    expect(c.send(record(c, 501))).toBe(false);
    expect(c.stats().dropped).toEqual({ records: 1, lines: 3 });
    await expect(c.write(record(c, 502))).rejects.toThrow("cannot write: the logger is closed");
  });
});

describe("the batching logger, with reqlog down", () => {
  closeAfterEach();

  it("holds writers under block when full, drops what cannot wait, and delivers the rest once reqlog is up", async () => {
    const address = await downServer();
    const c = client({
      server: address,
      whenFull: "block",
      maxBufferedRecords: 10,
      flushIntervalMs: 5,
      retry: { initialMs: 20, maxMs: 100 },
    });
    for (let i = 0; i < 10; i++) await c.write(record(c, i));
    const eleventh = c.write(record(c, 10));
    expect(await stillPending(eleventh)).toBe("pending");
    expect(c.send(record(c, 11))).toBe(false);
    const held = c.stats();
    expect(held.buffered.records).toBe(10);
    expect(held.dropped).toEqual({ records: 1, lines: 3 });
    expect(held.failures).toBeGreaterThan(0);
    expect(held.lastError).toMatch(/ECONNREFUSED|unavailable/i);

    const ts = await startTestServer({ listen: address });
    servers.push(ts);
    await eleventh;
    await c.flush({ timeoutMs: 10_000 });
    expect((await readAll(ts.client, "forge")).map(idOf).sort()).toEqual(Array.from({ length: 11 }, (_, i) => `r${i}`).sort());
    expect(c.stats().acknowledged.records).toBe(11);
  });

  it("drops the oldest under drop-oldest, stays within its bounds, and delivers the newest once reqlog is up", async () => {
    const address = await downServer();
    const maxBufferedBytes = 48 * 1024;
    const c = client({ server: address, maxBufferedRecords: 100, maxBufferedBytes, flushIntervalMs: 5, retry: { initialMs: 20, maxMs: 100 } });
    let most = { records: 0, bytes: 0 };
    for (let i = 0; i < 1000; i++) {
      c.send(record(c, i));
      const { buffered } = c.stats();
      most = { records: Math.max(most.records, buffered.records), bytes: Math.max(most.bytes, buffered.bytes) };
    }
    expect(most.records).toBeLessThanOrEqual(100);
    expect(most.bytes).toBeLessThanOrEqual(maxBufferedBytes);
    const { buffered, dropped } = c.stats();
    expect(dropped.records + buffered.records).toBe(1000);

    const ts = await startTestServer({ listen: address });
    servers.push(ts);
    await c.flush({ timeoutMs: 10_000 });
    const stored = (await readAll(ts.client, "forge")).map(idOf).sort();
    // What is left is the newest records, every one of them.
    expect(stored).toEqual(Array.from({ length: buffered.records }, (_, i) => `r${1000 - buffered.records + i}`).sort());
    expect(c.stats().acknowledged.records + c.stats().dropped.records).toBe(1000);
  });

  it("keeps the heap within its byte bound however much is written while reqlog is down", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const c = client({ server: await downServer(), maxBufferedBytes: 4 * 1024 * 1024, retry: { initialMs: 50, maxMs: 200 } });
    gc();
    const before = process.memoryUsage().heapUsed;
    const line = "x".repeat(1000);
    // 200,000 records of about 1 KB: 200 MB were they all kept.
    for (let i = 0; i < 200_000; i++) c.send(record(c, i, 1, line));
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    expect(c.stats().buffered.bytes).toBeLessThanOrEqual(4 * 1024 * 1024);
    expect(c.stats().dropped.records).toBeGreaterThan(190_000);
    expect(grown).toBeLessThan(64 * 1024 * 1024);
  });

  it("gives close() up after its timeout, dropping what is left and saying how much", async () => {
    const c = client({ server: await downServer(), retry: { initialMs: 20, maxMs: 50 } });
    for (let i = 0; i < 5; i++) c.send(record(c, i, 2));
    const err = await c.close({ timeoutMs: 300 }).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.DeadlineExceeded);
    expect((err as ConnectError).rawMessage).toMatch(
      /^cannot flush: 5 records and 10 lines not acknowledged after 300 ms \(last failure: .*(ECONNREFUSED|unavailable).*\)$/i,
    );
    expect(c.stats().dropped).toEqual({ records: 5, lines: 10 });
    expect(c.stats().buffered).toEqual({ records: 0, lines: 0, bytes: 0 });
  });
});

describe("the batching logger, over a rate limit", () => {
  let now = 0;
  const ts = useTestServer({ limits: { rateLimit: 2 }, monotonicNow: () => now });
  closeAfterEach();

  it("waits as long as the service's RetryInfo says before sending again, then delivers", async () => {
    const { token } = await ts.backend.tokens.create({ name: "app", scopes: ["write:logs"] });
    const errors: string[] = [];
    const c = client({ server: ts.server.address, token, retry: { initialMs: 1, maxMs: 1 }, onError: (e) => errors.push(e.rawMessage) });
    // The rate limiter's clock stands still: two calls spend the token's burst, so the Ingest
    // stream that follows is refused with RetryInfo 500 ms, every time, until the clock moves.
    await c.rpc.setStatus({ status: "starting" });
    await c.rpc.setStatus({ status: "serving" });
    for (let i = 0; i < 4; i++) c.send(record(c, i));
    await vi.waitFor(() => expect(c.stats().failures).toBeGreaterThan(0), { timeout: 5000 });
    const failuresThen = c.stats().failures;
    await new Promise((resolve) => setTimeout(resolve, 1200));
    // A client that ignored RetryInfo would try again every millisecond or so (its backoff here); one honouring it, at most 3 times.
    expect(c.stats().failures - failuresThen).toBeLessThanOrEqual(3);
    expect(errors[0]).toBe("rate limit of 2 calls/s for this token exceeded: retry in 500 ms (limit rate-limit=2)");
    expect(c.stats().acknowledged.records).toBe(0);
    now += 60_000;
    await c.flush({ timeoutMs: 5000 });
    const ids = ["r0", "r1", "r2", "r3"];
    expect((await ts.stored(...ids.map((id) => new TextEncoder().encode(id)))).map(idOf)).toEqual(ids);
    expect(c.stats().retried.records).toBeGreaterThanOrEqual(4);
  });
});

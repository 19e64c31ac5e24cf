import { describe, expect, it, vi } from "vitest";
import type { RequestLog } from "../../gen/reqlog/v1/log_service_pb.js";
import { Code } from "../../src/reqlog-error.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { type CallFailure, callError, failureOf } from "../helpers/test-client.js";
import { type ReadInit, useTestServer } from "../helpers/test-server.js";

const ts = useTestServer({ limits: { maxTails: 2, maxTailsPerToken: 1 } });
const write = ts.write;
const ids = (logs: RequestLog[]) => logs.map((l) => new TextDecoder().decode(l.requestId));

interface Tail {
  /** The records received so far, in the order they came. */
  records: RequestLog[];
  /** Resolves once `n` records have arrived; rejects if the call ends first. */
  waitFor(n: number): Promise<RequestLog[]>;
  /** Resolves once the record with this request id has arrived; rejects if the call ends first. */
  waitForId(requestId: string): Promise<RequestLog[]>;
  /** How the call ended: null for a normal end, else its failure (CANCELLED after `cancel`). */
  ended: Promise<CallFailure | null>;
  /** Stops pulling replies (the reader stalls: HTTP/2 flow control holds the server back), until `resume`. */
  pause(): void;
  resume(): void;
  cancel(): void;
}

/**
 * Opens a Tail and resolves once the server has it in place (its response
 * headers came: the server sends them once it has subscribed); rejects
 * with the call's error if the server refuses it.
 */
async function tail(init: ReadInit = {}, client = ts.client): Promise<Tail> {
  const abort = new AbortController();
  let inPlace!: () => void;
  const headers = new Promise<void>((resolve) => (inPlace = resolve));
  const replies = client.tail({ appId: "forge", ...init }, { signal: abort.signal, onHeader: () => inPlace() });
  const records: RequestLog[] = [];
  const listeners = new Set<() => void>();
  let stalled: { until: Promise<void>; resume(): void } | undefined;

  // Pulls one reply at a time, and none while stalled.
  const pulled = (async () => {
    const iterator = replies[Symbol.asyncIterator]();
    for (;;) {
      while (stalled) await stalled.until;
      const next = await iterator.next();
      if (next.done) return;
      records.push(...next.value.log);
      for (const listener of listeners) listener();
    }
  })();
  let over = false;
  const ended = pulled.then(
    () => null,
    (err: unknown) => failureOf(err),
  );
  void ended.then(() => {
    over = true;
    for (const listener of listeners) listener();
  });
  await Promise.race([headers, pulled]);

  /** Resolves with the records once `done()`; rejects if the call ends before. */
  const until = (done: () => boolean, awaited: string) =>
    new Promise<RequestLog[]>((resolve, reject) => {
      const check = () => {
        if (done()) resolve(records);
        else if (over) reject(new Error(`the tail ended after ${records.length} records, awaiting ${awaited}`));
        else return;
        listeners.delete(check);
      };
      listeners.add(check);
      check();
    });
  const t: Tail = {
    records,
    ended,
    waitFor: (n) => until(() => records.length >= n, `${n} records`),
    waitForId: (requestId) => until(() => ids(records).includes(requestId), requestId),
    pause() {
      let resume!: () => void;
      const released = new Promise<void>((resolve) => (resume = resolve));
      stalled ??= { until: released, resume };
    },
    resume() {
      const was = stalled;
      stalled = undefined;
      was?.resume();
    },
    cancel() {
      abort.abort();
      t.resume();
    },
  };
  return t;
}

describe("Tail", () => {
  it("delivers matching records written after it starts, and records again when they change", async () => {
    await write(minimalLog({ requestId: rid("before"), endTime: t0 + 1n }));
    const t = await tail({ combinedLogRegex: '" 50\\d ', includeAppLogs: true });
    await write(
      minimalLog({ requestId: rid("ok"), endTime: t0 + 2n, status: 200 }),
      minimalLog({ requestId: rid("boom"), endTime: t0 + 3n, status: 502 }),
    );
    await write(minimalLog({ requestId: rid("ok"), endTime: t0 + 4n, status: 503 }));
    expect(ids(await t.waitFor(2))).toEqual(["boom", "ok"]);
    expect(t.records[1]!.status).toBe(503);
    t.cancel();
  });

  it("does not deliver another app's records, nor in-progress ones unless asked", async () => {
    // App forge exists before the tails start, so that its tails do look at the other app's change.
    await write(minimalLog({ requestId: rid("before"), endTime: t0 }));
    const finishedOnly = await tail();
    const withIncomplete = await tail({ includeIncomplete: true });
    // "done" is written last: once a tail has it, it has all it will get of the three.
    await write(minimalLog({ appId: "other", requestId: rid("x"), endTime: t0 }));
    await write(minimalLog({ requestId: rid("open"), finished: false }));
    await write(minimalLog({ requestId: rid("done"), endTime: t0 }));
    expect(ids(await finishedOnly.waitForId("done"))).toEqual(["done"]);
    expect(ids(await withIncomplete.waitForId("done"))).toEqual(["open", "done"]);
    finishedOnly.cancel();
    withIncomplete.cancel();
    expect(await finishedOnly.ended).toMatchObject({ code: Code.CANCELLED });
  });

  it("keeps serving while a tail's reader stalls, reading no further ahead than flow control lets it send, then the reader gets every record once and in order", async () => {
    const t = await tail();
    t.pause();
    // What the tail reads from the store: had it queued what it could not
    // send, it would read all that was written.
    let fetched = 0;
    const store = ts.backend.store;
    const changes = store.changes.bind(store);
    vi.spyOn(store, "changes").mockImplementation(async (...args) => {
      const result = await changes(...args);
      fetched += result.records.length;
      return result;
    });
    const total = 3000;
    for (let batch = 0; batch < total / 500; batch++) {
      await write(
        ...Array.from({ length: 500 }, (_, i) =>
          minimalLog({ requestId: rid(`r${batch * 500 + i}`), endTime: t0, userAgent: "x".repeat(2000) }),
        ),
      );
    }
    // 6 MB were committed while the reader stalled; other calls are answered.
    const newest = await ts.client.read({ appId: "forge", count: 1n }, { timeoutMs: 5000 });
    expect(ids(newest.log)).toEqual(["r2999"]);
    expect(ts.server.stats().openTails).toBe(1);
    // A reply holds at most 256 records (~0.5 MB): the one the reader took and
    // the one flow control holds back are all the tail has read, not all 3000.
    expect(fetched).toBeLessThan(total / 4);
    t.resume();
    const got = await t.waitFor(total);
    expect(ids(got)).toEqual(Array.from({ length: total }, (_, i) => `r${i}`));
    expect(fetched).toBe(total);
    t.cancel();
  });

  it("refuses more open tails than max-tails with RESOURCE_EXHAUSTED", async () => {
    const a = await tail();
    const b = await tail();
    expect(await callError(tail())).toEqual({
      code: Code.RESOURCE_EXHAUSTED,
      details: "number of open Tail calls is 3, over the limit max-tails=2",
      reason: "INVALID_REQUEST",
    });
    a.cancel();
    b.cancel();
  });

  it("refuses a token more open tails than max-tails-per-token, leaving the rest of the pool to other tokens", async () => {
    const token = async (name: string) => ts.connect({ token: (await ts.backend.tokens.create({ name, scopes: ["read:logs"], apps: ["forge"] })).token });
    const [reader, other] = [await token("reader"), await token("other")];
    const a = await tail({}, reader);
    expect(await callError(tail({}, reader))).toEqual({
      code: Code.RESOURCE_EXHAUSTED,
      details: "number of open Tail calls of this token is 2, over the limit max-tails-per-token=1: end one first",
      reason: "INVALID_REQUEST",
    });
    const b = await tail({}, other);
    // Once the first ends, its token may open another.
    a.cancel();
    await a.ended;
    await vi.waitFor(async () => (await tail({}, reader)).cancel());
    b.cancel();
  });

  it("refuses request ids", async () => {
    expect(await callError(tail({ requestId: [rid("a")] }))).toEqual({
      code: Code.INVALID_ARGUMENT,
      details: "Tail follows new records: request_id and offset are not accepted",
      reason: "INVALID_REQUEST",
    });
  });

  it("ends cleanly when the server shuts down", async () => {
    const t = await tail();
    await ts.server.shutdown();
    expect(await t.ended).toBeNull();
  });
});

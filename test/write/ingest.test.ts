import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  type IngestAck,
  type IngestRequest,
  IngestRequestSchema,
  RequestLinesSchema,
  UserAppLogLineSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { Code } from "../../src/reqlog-error.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { bearer, type CallFailure, failureOf } from "../helpers/test-client.js";
import { useTestServer } from "../helpers/test-server.js";

const ts = useTestServer({ limits: { maxRecordsPerWrite: 50 } });

type BatchInit = Omit<Exclude<MessageInitShape<typeof IngestRequestSchema>, IngestRequest>, "$typeName">;

/**
 * An Ingest stream driven by hand: batches go out as `send` is called, the
 * request side stays open until `end`. `ended` resolves with the stream's
 * failure, or null when it ended OK; `acked(n)` once n acks have arrived.
 * A deadline bounds every stream, so a server that never answers fails the
 * test with DEADLINE_EXCEEDED instead of hanging it.
 */
function open(options: { headers?: Record<string, string> } = {}) {
  const queue: (BatchInit | null)[] = [];
  let wake: (() => void) | undefined;
  const push = (item: BatchInit | null) => {
    queue.push(item);
    wake?.();
  };
  async function* requests() {
    for (;;) {
      while (queue.length === 0) await new Promise<void>((resolve) => (wake = resolve));
      const next = queue.shift()!;
      if (next === null) return;
      yield create(IngestRequestSchema, next);
    }
  }
  const acks: IngestAck[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const ended = (async (): Promise<CallFailure | null> => {
    try {
      for await (const ack of ts.client.ingest(requests(), { ...options, timeoutMs: 5000 })) {
        acks.push(ack);
        for (const w of waiters.filter((w) => w.n <= acks.length)) w.resolve();
      }
      return null;
    } catch (err) {
      return failureOf(err);
    } finally {
      push(null); // the request side ends with the call
    }
  })();
  /** Resolves once `n` acks have arrived; rejects if the stream ends first. */
  const acked = (n: number) =>
    Promise.race([
      new Promise<void>((resolve) => (acks.length >= n ? resolve() : waiters.push({ n, resolve }))),
      ended.then((err) => {
        throw new Error(`the stream ended after ${acks.length} acks, waiting for ${n}: ${err?.details ?? "OK"}`);
      }),
    ]);
  return { send: push, end: () => push(null), acks, acked, ended };
}

const lines = (requestId: string, n: number) =>
  create(RequestLinesSchema, {
    appId: "forge",
    versionId: "v1",
    requestId: rid(requestId),
    line: Array.from({ length: n }, (_, i) => create(UserAppLogLineSchema, { timestampUsec: t0 + BigInt(i), level: 1n, message: `l${i}` })),
  });

const storedIds = async (...ids: string[]) =>
  (await ts.stored(...ids.map(rid))).map((l) => new TextDecoder().decode(l.requestId));

describe("Ingest", () => {
  it("acknowledges each batch, in order, once it is stored", async () => {
    const { send, end, acks, ended } = open();
    for (let b = 1; b <= 20; b++) {
      send({
        batchId: BigInt(b),
        log: Array.from({ length: 10 }, (_, i) => minimalLog({ requestId: rid(`b${b}-${i}`), endTime: t0 + BigInt(b * 100 + i) })),
        lines: [lines(`b${b}-0`, 3)],
      });
    }
    end();
    expect(await ended).toBeNull();
    expect(acks.map((a) => [a.batchId, a.records, a.lines])).toEqual(Array.from({ length: 20 }, (_, i) => [BigInt(i + 1), 10, 3]));
    const read = await ts.read({ count: 1000n, includeAppLogs: true });
    expect(read.log).toHaveLength(200);
    expect(read.log.filter((l) => l.line.length === 3)).toHaveLength(20);
  });

  it("acknowledges each batch as it is stored, so a client may wait for each ack before it sends the next", async () => {
    const { send, end, acks, acked, ended } = open();
    for (let b = 1; b <= 3; b++) {
      send({ batchId: BigInt(b), log: [minimalLog({ requestId: rid(`r${b}`), endTime: t0 + BigInt(b) })] });
      await acked(b);
      expect(await storedIds(`r${b}`)).toEqual([`r${b}`]);
    }
    end();
    expect(await ended).toBeNull();
    expect(acks.map((a) => [a.batchId, a.records])).toEqual([[1n, 1], [2n, 1], [3n, 1]]);
  });

  it("ends the stream at a refused batch, keeping the batches acknowledged before it", async () => {
    const { send, end, acks, ended } = open();
    send({ batchId: 1n, log: [minimalLog({ requestId: rid("ok"), endTime: t0 })] });
    send({ batchId: 2n, log: [minimalLog({ requestId: rid("bad"), method: "" })] });
    send({ batchId: 3n, log: [minimalLog({ requestId: rid("after"), endTime: t0 })] });
    end();
    const err = await ended;
    expect(err?.code).toBe(Code.INVALID_ARGUMENT);
    expect(err?.details).toBe("log[0].method is empty");
    expect(acks.map((a) => a.batchId)).toEqual([1n]);
    expect(await storedIds("ok", "bad", "after")).toEqual(["ok"]);
  });

  it("refuses a batch over max-records-per-write, and app lines at a bad level", async () => {
    const big = open();
    big.send({ batchId: 1n, log: Array.from({ length: 51 }, (_, i) => minimalLog({ requestId: rid(`r${i}`) })) });
    expect((await big.ended)?.details).toBe("number of records in an Ingest batch is 51, over the limit max-records-per-write=50");
    const level = open();
    const bad = lines("x", 1);
    bad.line[0]!.level = 9n;
    level.send({ batchId: 1n, lines: [bad] });
    expect((await level.ended)?.details).toBe("lines[0].line[0].level is 9: levels are 0 (DEBUG) to 4 (CRITICAL)");
    const unnamed = open();
    const noId = lines("y", 1);
    delete (noId as { requestId?: Uint8Array }).requestId;
    unnamed.send({ batchId: 1n, log: [minimalLog({ requestId: rid("z") })], lines: [noId] });
    expect((await unnamed.ended)?.details).toBe("required field not set: lines[0].request_id");
    expect(await storedIds("z")).toEqual([]);
  });

  it("needs a write token once tokens exist", async () => {
    const { token: read } = await ts.backend.tokens.create({ name: "r", scopes: ["read:logs"] });
    const a = open();
    expect((await a.ended)?.code).toBe(Code.UNAUTHENTICATED);
    const b = open(bearer(read));
    b.send({ batchId: 1n, log: [minimalLog()] });
    expect((await b.ended)?.details).toBe("this token lacks the write:logs scope");
  });
});

import { create } from "@bufbuild/protobuf";
import { type ClientReadableStream, Metadata, status, type ServiceError } from "@grpc/grpc-js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  LogReadRequestSchema,
  type LogReadResponse,
  type RequestLog,
  WriteRequestSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { unaryCall } from "../helpers/test-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let ts: TestServer;
beforeEach(async () => {
  ts = await startTestServer({ limits: { maxTails: 2 } });
});
afterEach(async () => {
  await ts.close();
});

type ReadInit = Parameters<typeof create<typeof LogReadRequestSchema>>[1];

interface Tail {
  stream: ClientReadableStream<LogReadResponse>;
  records: RequestLog[];
  /** Resolves once `n` records have arrived. */
  waitFor(n: number): Promise<RequestLog[]>;
  ended: Promise<ServiceError | null>;
}

/** Opens a Tail and resolves once the server has it in place (headers received). */
async function tail(init: ReadInit = {}): Promise<Tail> {
  const stream = (ts.client.tail as (r: unknown, md: Metadata) => ClientReadableStream<LogReadResponse>)(
    create(LogReadRequestSchema, { appId: "forge", ...init }),
    new Metadata(),
  );
  const records: RequestLog[] = [];
  const waiters: (() => void)[] = [];
  stream.on("data", (r: LogReadResponse) => {
    records.push(...r.log);
    for (const w of waiters.splice(0)) w();
  });
  const ended = new Promise<ServiceError | null>((resolve) => {
    stream.on("error", (e: ServiceError) => resolve(e));
    stream.on("end", () => resolve(null));
  });
  await new Promise<void>((resolve, reject) => {
    stream.once("metadata", () => resolve());
    stream.once("error", reject);
  });
  return {
    stream,
    records,
    ended,
    waitFor(n) {
      return new Promise((resolve) => {
        const check = () => (records.length >= n ? resolve(records) : waiters.push(check));
        check();
      });
    },
  };
}

async function write(...logs: RequestLog[]) {
  await unaryCall(ts.client, "write", create(WriteRequestSchema, { log: logs }));
}

const ids = (logs: RequestLog[]) => logs.map((l) => new TextDecoder().decode(l.requestId));

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
    t.stream.cancel();
  });

  it("does not deliver another app's records or in-progress ones unless asked", async () => {
    const t = await tail();
    await write(minimalLog({ appId: "other", requestId: rid("x"), endTime: t0 }));
    await write(minimalLog({ requestId: rid("open"), finished: false }));
    await write(minimalLog({ requestId: rid("done"), endTime: t0 }));
    expect(ids(await t.waitFor(1))).toEqual(["done"]);
    t.stream.cancel();
  });

  it("queues no more than flow control allows while its reader stalls, then catches up once and in order", async () => {
    const t = await tail();
    t.stream.pause();
    const total = 3000;
    for (let batch = 0; batch < total / 500; batch++) {
      await write(
        ...Array.from({ length: 500 }, (_, i) =>
          minimalLog({ requestId: rid(`r${batch * 500 + i}`), endTime: t0, userAgent: "x".repeat(2000) }),
        ),
      );
    }
    // 6 MB were committed while the reader stalled: the tail ends up blocked
    // on flow control with one message unsent, never more.
    let most = 0;
    const until = Date.now() + 5000;
    let blocked = false;
    while (Date.now() < until && !blocked) {
      const stats = ts.server.stats();
      expect(stats.openTails).toBe(1);
      most = Math.max(most, stats.tailMaxUnsent);
      blocked = stats.tailMaxUnsent === 1;
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(blocked).toBe(true);
    expect(most).toBe(1);
    t.stream.resume();
    const got = await t.waitFor(total);
    expect(ids(got)).toEqual(Array.from({ length: total }, (_, i) => `r${i}`));
    t.stream.cancel();
  });

  it("refuses more open tails than max-tails with RESOURCE_EXHAUSTED", async () => {
    const a = await tail();
    const b = await tail();
    const c = await tail().catch((e: ServiceError) => e);
    expect((c as ServiceError).code).toBe(status.RESOURCE_EXHAUSTED);
    expect((c as ServiceError).details).toBe("number of open Tail calls is 3, over the limit max-tails=2");
    a.stream.cancel();
    b.stream.cancel();
  });

  it("refuses request ids", async () => {
    const err = await tail({ requestId: [rid("a")] }).catch((e: ServiceError) => e);
    expect((err as ServiceError).code).toBe(status.INVALID_ARGUMENT);
    expect((err as ServiceError).details).toBe("Tail follows new records: request_id and offset are not accepted");
  });

  it("ends cleanly when the server shuts down", async () => {
    const t = await tail();
    await ts.server.shutdown();
    expect(await t.ended).toBeNull();
  });
});

import { create } from "@bufbuild/protobuf";
import { type ClientDuplexStream, Metadata, type ServiceError, status } from "@grpc/grpc-js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type IngestAck,
  IngestRequestSchema,
  LogReadRequestSchema,
  type LogReadResponse,
  RequestLinesSchema,
  UserAppLogLineSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { unaryCall } from "../helpers/test-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let ts: TestServer;
beforeEach(async () => {
  ts = await startTestServer({ limits: { maxRecordsPerWrite: 50 } });
});
afterEach(async () => {
  await ts.close();
});

function open(md: Record<string, string> = {}) {
  const m = new Metadata();
  for (const [k, v] of Object.entries(md)) m.set(k, v);
  const stream = (ts.client.ingest as (m: Metadata) => ClientDuplexStream<unknown, IngestAck>)(m);
  const acks: IngestAck[] = [];
  stream.on("data", (a: IngestAck) => acks.push(a));
  const ended = new Promise<ServiceError | null>((resolve) => {
    stream.on("error", (e: ServiceError) => resolve(e));
    stream.on("end", () => resolve(null));
  });
  return { stream, acks, ended };
}

const lines = (requestId: string, n: number) =>
  create(RequestLinesSchema, {
    appId: "forge",
    versionId: "v1",
    requestId: rid(requestId),
    line: Array.from({ length: n }, (_, i) => create(UserAppLogLineSchema, { timestampUsec: t0 + BigInt(i), level: 1n, message: `l${i}` })),
  });

describe("Ingest", () => {
  it("acknowledges each batch, in order, once it is stored", async () => {
    const { stream, acks, ended } = open();
    for (let b = 1; b <= 20; b++) {
      stream.write(create(IngestRequestSchema, {
        batchId: BigInt(b),
        log: Array.from({ length: 10 }, (_, i) => minimalLog({ requestId: rid(`b${b}-${i}`), endTime: t0 + BigInt(b * 100 + i) })),
        lines: [lines(`b${b}-0`, 3)],
      }));
    }
    stream.end();
    expect(await ended).toBeNull();
    expect(acks.map((a) => [a.batchId, a.records, a.lines])).toEqual(Array.from({ length: 20 }, (_, i) => [BigInt(i + 1), 10, 3]));
    const read = await unaryCall<LogReadResponse>(ts.client, "read", create(LogReadRequestSchema, { appId: "forge", count: 1000n, includeAppLogs: true }));
    expect(read.log).toHaveLength(200);
    expect(read.log.filter((l) => l.line.length === 3)).toHaveLength(20);
  });

  it("ends the stream at a refused batch, keeping the batches acknowledged before it", async () => {
    const { stream, acks, ended } = open();
    stream.write(create(IngestRequestSchema, { batchId: 1n, log: [minimalLog({ requestId: rid("ok"), endTime: t0 })] }));
    stream.write(create(IngestRequestSchema, { batchId: 2n, log: [minimalLog({ requestId: rid("bad"), method: "" })] }));
    stream.write(create(IngestRequestSchema, { batchId: 3n, log: [minimalLog({ requestId: rid("after"), endTime: t0 })] }));
    stream.end();
    const err = await ended;
    expect(err?.code).toBe(status.INVALID_ARGUMENT);
    expect(err?.details).toBe("log[0].method is empty");
    expect(acks.map((a) => a.batchId)).toEqual([1n]);
    expect(ts.store.getRequests("forge", [rid("ok"), rid("bad"), rid("after")]).map((l) => new TextDecoder().decode(l.requestId))).toEqual(["ok"]);
  });

  it("refuses a batch over max-records-per-write, and app lines at a bad level", async () => {
    const big = open();
    big.stream.write(create(IngestRequestSchema, { batchId: 1n, log: Array.from({ length: 51 }, (_, i) => minimalLog({ requestId: rid(`r${i}`) })) }));
    expect((await big.ended)?.details).toBe("number of records in an Ingest batch is 51, over the limit max-records-per-write=50");
    const level = open();
    const bad = lines("x", 1);
    bad.line[0]!.level = 9n;
    level.stream.write(create(IngestRequestSchema, { batchId: 1n, lines: [bad] }));
    expect((await level.ended)?.details).toBe("lines[0].line[0].level is 9: levels are 0 (DEBUG) to 4 (CRITICAL)");
    const unnamed = open();
    const noId = lines("y", 1);
    delete (noId as { requestId?: Uint8Array }).requestId;
    unnamed.stream.write(create(IngestRequestSchema, { batchId: 1n, log: [minimalLog({ requestId: rid("z") })], lines: [noId] }));
    expect((await unnamed.ended)?.details).toBe("required field not set: lines[0].request_id");
    expect(ts.store.getRequests("forge", [rid("z")])).toEqual([]);
  });

  it("needs a write token once tokens exist", async () => {
    const read = ts.tokens.create({ name: "r", scopes: ["read:logs"] }).token;
    const a = open();
    expect((await a.ended)?.code).toBe(status.UNAUTHENTICATED);
    const b = open({ authorization: `Bearer ${read}` });
    b.stream.write(create(IngestRequestSchema, { batchId: 1n, log: [minimalLog()] }));
    expect((await b.ended)?.details).toBe("this token lacks the write:logs scope");
  });
});

import { create, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  IngestRequestSchema,
  LogLineSchema,
  RequestLinesSchema,
  UserAppLogLineSchema,
  WriteRequestSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { Code } from "../../src/reqlog-error.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { lenient } from "../helpers/lenient-schema.js";
import { callError, rawUnaryCall } from "../helpers/test-client.js";
import { useTestServer } from "../helpers/test-server.js";

// Requests of 16 KiB and more are decoded and validated on the prepare
// worker; the nickname pads a record past that without changing its checks.
const pad = "n".repeat(20_000);

/** The message with these fields unset, as a client that leaves them out sends it. */
function without<T extends object>(message: T, ...fields: (keyof T)[]): T {
  for (const f of fields) delete message[f];
  return message;
}

describe("Writes and Ingest batches decoded off the main thread", () => {
  const ts = useTestServer({ limits: { maxRecordsPerWrite: 3 }, prepareWorkers: 1 });

  it("stores a large Write's records field for field, defaults and presence kept", async () => {
    const before = ts.prepare!.completed;
    await ts.write(
      minimalLog({ requestId: rid("a"), nickname: pad, line: [create(LogLineSchema, { time: t0 + 1n, level: 2, logMessage: "hi" })] }),
      minimalLog({ requestId: rid("b"), moduleId: "api", finished: false, replicaIndex: 3, cost: 0.5 }),
    );
    expect(ts.prepare!.completed).toBe(before + 1);
    const [a, b] = await ts.stored(rid("a"), rid("b"));
    // Unset fields read back as their proto defaults and stay unset.
    expect([a!.moduleId, a!.finished, a!.replicaIndex, a!.nickname.length]).toEqual(["default", true, -1, pad.length]);
    expect(a!.line.map((l) => [l.time, l.level, l.logMessage])).toEqual([[t0 + 1n, 2, "hi"]]);
    expect([b!.moduleId, b!.finished, b!.replicaIndex, b!.cost]).toEqual(["api", false, 3, 0.5]);
  });

  it.each([
    ["a record missing required fields", () => [without(minimalLog({ nickname: pad }), "method", "startTime")], "required fields not set: log[0].start_time, log[0].method"],
    ["an end time before the start time", () => [minimalLog({ nickname: pad, endTime: t0 - 1n })], `log[0].end_time (${t0 - 1n}) is before log[0].start_time (${t0})`],
    [
      "more records than max-records-per-write",
      () => ["a", "b", "c", "d"].map((id) => minimalLog({ requestId: rid(id), nickname: pad })),
      "number of records in Write is 4, over the limit max-records-per-write=3",
    ],
  ] as const)("refuses %s with the error the main thread gives", async (_name, logs, message) => {
    const before = ts.prepare!.completed;
    const err = await callError(ts.write(...logs()));
    expect(err).toEqual({ code: Code.INVALID_ARGUMENT, details: message, reason: "INVALID_REQUEST" });
    expect(ts.prepare!.completed).toBe(before + 1);
    expect(await ts.stored(rid("req-1"), rid("a"))).toEqual([]);
  });

  it("refuses a large Write that is not UTF-8 as one that does not decode", async () => {
    const good = toBinary(lenient(WriteRequestSchema), create(WriteRequestSchema, { log: [minimalLog({ appId: "\u00e9", nickname: pad })] }));
    const bytes = Buffer.from(good);
    bytes[bytes.indexOf(Buffer.from("\u00e9", "utf8"))] = 0xff;
    const err = await callError(rawUnaryCall(ts.server.address, "/reqlog.v1.LogService/Write", bytes));
    expect(err.code).toBe(Code.INVALID_ARGUMENT);
    expect(err.details).toMatch(/^cannot decode reqlog\.v1\.WriteRequest: .*UTF-8/i);
  });

  it("acknowledges large Ingest batches in order, each stored", async () => {
    const batch = (n: number) =>
      create(IngestRequestSchema, {
        batchId: BigInt(n),
        log: [minimalLog({ requestId: rid(`i${n}`), nickname: pad })],
        lines: [
          create(RequestLinesSchema, {
            appId: "forge",
            versionId: "v1",
            requestId: rid(`i${n}`),
            line: [create(UserAppLogLineSchema, { timestampUsec: t0 + 5n, level: 1n, message: `line ${n}` })],
          }),
        ],
      });
    async function* batches() {
      for (let n = 0; n < 4; n++) yield batch(n);
    }
    const acks = [];
    for await (const ack of ts.client.ingest(batches())) acks.push([ack.batchId, ack.records, ack.lines]);
    expect(acks).toEqual([0n, 1n, 2n, 3n].map((id) => [id, 1, 1]));
    const stored = await ts.stored(...[0, 1, 2, 3].map((n) => rid(`i${n}`)));
    expect(stored.map((s) => s.line.map((l) => l.logMessage))).toEqual([["line 0"], ["line 1"], ["line 2"], ["line 3"]]);
  });
});

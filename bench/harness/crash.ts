import { create, toBinary } from "@bufbuild/protobuf";
import {
  FlushRequestSchema,
  RequestLogSchema,
  UserAppLogGroupSchema,
  UserAppLogLineSchema,
  WriteRequestSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { createLogServiceClient } from "../../src/client/log-service-client.js";
import { openSqliteBackend } from "../../src/store/sqlite/sqlite-backend.js";
import { startChildServer } from "./child-server.js";

const t0 = 1_795_000_000_000_000n;
const encode = (s: string) => new TextEncoder().encode(s);

export interface Acked {
  records: string[];
  flushed: string[];
}

/**
 * Writers send Writes and Flushes (with call metadata, as app servers do) as
 * fast as they are acknowledged until the server dies; returns what was
 * acknowledged.
 */
export async function loadUntilKilled(address: string, cycle: number, killAfterMs: number, kill: () => void): Promise<Acked> {
  const client = createLogServiceClient({ server: address });
  const flush = createLogServiceClient({ server: address });
  const acked: Acked = { records: [], flushed: [] };
  let alive = true;
  const writer = async (w: number) => {
    for (let i = 0; alive; i++) {
      const id = `c${cycle}-w${w}-${i}`;
      try {
        if (i % 3 === 2) {
          const logs = toBinary(UserAppLogGroupSchema, create(UserAppLogGroupSchema, {
            logLine: [create(UserAppLogLineSchema, { timestampUsec: t0 + BigInt(i), level: 1n, message: id })],
          }));
          await flush.flush(create(FlushRequestSchema, { logs }), {
            headers: { "reqlog-app-id": "forge", "reqlog-version-id": "v1", "reqlog-request-id": id },
          });
          acked.flushed.push(id);
        } else {
          await client.write(create(WriteRequestSchema, {
            log: [create(RequestLogSchema, {
              appId: "forge", versionId: "v1", requestId: encode(id), ip: "192.0.2.1", startTime: t0, endTime: t0 + BigInt(i),
              latency: 0n, mcycles: 0n, method: "POST", resource: "/api/v1/repos/a/b/branches", httpVersion: "HTTP/1.1",
              status: 200, responseSize: 0n, urlMapEntry: "", combined: "",
            })],
          }));
          acked.records.push(id);
        }
      } catch {
        alive = false;
      }
    }
  };
  const writers = Array.from({ length: 8 }, (_, w) => writer(w));
  setTimeout(kill, killAfterMs);
  await Promise.all(writers);
  client.close();
  flush.close();
  return acked;
}

export interface CrashReport {
  cycles: number;
  acknowledged: number;
  missing: string[];
  integrity: string;
}

/** Checks that every acknowledged write is in the database, and its integrity. */
export async function verifyAcked(dbPath: string, acked: Acked): Promise<CrashReport & { cycles: 0 }> {
  const backend = openSqliteBackend({ path: dbPath, readWorkers: 0 });
  try {
    const integrity = backend.db.pragma("integrity_check", { simple: true }) as string;
    const signal = new AbortController().signal;
    const stored = (ids: string[]) => backend.store.getRequests("forge", ids.map(encode), signal);
    const records = new Set((await stored(acked.records)).filter((r) => r.finished && r.status === 200).map((r) => new TextDecoder().decode(r.requestId)));
    const flushed = await stored(acked.flushed);
    const withLine = new Set(flushed.filter((r) => r.line.some((l) => l.logMessage === new TextDecoder().decode(r.requestId))).map((r) => new TextDecoder().decode(r.requestId)));
    const missing = [...acked.records.filter((id) => !records.has(id)), ...acked.flushed.filter((id) => !withLine.has(id))];
    return { cycles: 0, acknowledged: acked.records.length + acked.flushed.length, missing, integrity };
  } finally {
    await backend.close();
  }
}

/** `cycles` times: start `reqlog serve`, load it, kill -9 it; then verify everything acknowledged. */
export async function crashCycles(dbPath: string, cycles: number, onCycle?: (cycle: number, acked: number) => void): Promise<CrashReport> {
  const all: Acked = { records: [], flushed: [] };
  for (let cycle = 0; cycle < cycles; cycle++) {
    const server = await startChildServer(["--listen", "127.0.0.1:0", "--db", dbPath, "--read-workers", "0"]);
    const acked = await loadUntilKilled(server.address, cycle, 300 + ((cycle * 97) % 400), () => server.process.kill("SIGKILL"));
    const { signal } = await server.exited;
    if (signal !== "SIGKILL") throw new Error(`cycle ${cycle}: the server ended by ${signal} instead of SIGKILL`);
    all.records.push(...acked.records);
    all.flushed.push(...acked.flushed);
    onCycle?.(cycle, acked.records.length + acked.flushed.length);
  }
  return { ...(await verifyAcked(dbPath, all)), cycles };
}


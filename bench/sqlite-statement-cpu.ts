/**
 * What each SQLite statement of the write path costs in CPU time, against
 * raw better-sqlite3 inserts of the same rows (peer-compare.ts
 * rawSqliteTarget): in-process, the seeded forge requests decoded from
 * their Write bytes, validated and stored through the SQLite store at
 * `batch` a call, 4 in flight (`--sync normal`), with process CPU time
 * taken around every statement call (getrusage: about 1 µs of each call's
 * figure is the measuring). Wall-clock profiles of a loaded machine
 * inflate a native call's share; CPU time does not, so this is what says
 * whether a statement costs more than raw's.
 *   npm run build && node dist/bench/sqlite-statement-cpu.js [requests [batch]]
 * (defaults 100000 requests, 1,000 a call).
 */
import { create, toBinary } from "@bufbuild/protobuf";
import Database from "better-sqlite3";
import { WriteRequestSchema } from "../gen/reqlog/v1/log_service_pb.js";
import { defaultLimits } from "../src/limits.js";
import { openSqliteBackend } from "../src/store/sqlite/sqlite-backend.js";
import { decodeMessage } from "../src/write/decode-message.js";
import { prepareWrite } from "../src/write/prepare-batches.js";
import { defaultPrivacy } from "../src/write/privacy.js";
import { rawSqliteTarget } from "./harness/peer-compare.js";
import { benchDbPath, trafficRecords } from "./load.js";

const n = Number(process.argv[2] ?? 100_000);
const batch = Number(process.argv[3] ?? 1000);
const shown = 12;

const cpuMicros = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

type Call = (this: Database.Statement, ...args: unknown[]) => unknown;

/** CPU µs and calls by statement text, for every statement run until `stop`. */
function measureStatements(): { byStatement: Map<string, { calls: number; micros: number }>; stop: () => void } {
  const probe = new Database(":memory:");
  const proto = Object.getPrototypeOf(probe.prepare("SELECT 1")) as Record<"run" | "get" | "all", Call>;
  probe.close();
  const byStatement = new Map<string, { calls: number; micros: number }>();
  const originals = (["run", "get", "all"] as const).map((method) => [method, proto[method]] as const);
  for (const [method, original] of originals) {
    proto[method] = function (this: Database.Statement, ...args: unknown[]) {
      const before = process.cpuUsage();
      try {
        return original.apply(this, args);
      } finally {
        const { user, system } = process.cpuUsage(before);
        let entry = byStatement.get(this.source);
        if (entry === undefined) byStatement.set(this.source, (entry = { calls: 0, micros: 0 }));
        entry.calls++;
        entry.micros += user + system;
      }
    };
  }
  return { byStatement, stop: () => originals.forEach(([method, original]) => (proto[method] = original)) };
}

async function main() {
  const logs = [...trafficRecords(n)];
  const bodies: Uint8Array[] = [];
  for (let i = 0; i < logs.length; i += batch) bodies.push(toBinary(WriteRequestSchema, create(WriteRequestSchema, { log: logs.slice(i, i + batch) })));

  const backend = openSqliteBackend({ path: benchDbPath("statement-cpu"), sync: "normal" });
  const signal = new AbortController().signal;
  const { byStatement, stop } = measureStatements();
  const started = cpuMicros();
  let next = 0;
  const lane = async () => {
    while (next < bodies.length) {
      const request = decodeMessage(WriteRequestSchema, bodies[next++]!);
      await backend.store.write(prepareWrite(request, defaultLimits, defaultPrivacy).records, signal);
    }
  };
  await Promise.all([lane(), lane(), lane(), lane()]);
  const storeMicros = cpuMicros() - started;
  stop();
  await backend.close();

  const raw = rawSqliteTarget(benchDbPath("statement-cpu-raw"), "normal");
  const rows = [];
  for (let i = 0; i < logs.length; i += batch) rows.push(raw.prepare(logs.slice(i, i + batch)));
  const rawStarted = cpuMicros();
  for (const chunk of rows) await raw.write(chunk);
  const rawMicros = cpuMicros() - rawStarted;
  raw.db.close();

  const all = [...byStatement].sort((a, b) => b[1].micros - a[1].micros);
  const sqlMicros = all.reduce((sum, [, e]) => sum + e.micros, 0);
  console.log(`${n.toLocaleString()} forge requests at ${batch.toLocaleString()} a call, 4 in flight, --sync normal, in-process`);
  console.log(`reqlog: ${(storeMicros / n).toFixed(1)} µs of CPU a record (decode, validate, store), of which statements ${(sqlMicros / n).toFixed(1)}`);
  console.log(`raw better-sqlite3, the same rows and indexes: ${(rawMicros / n).toFixed(1)} µs a record (its INSERTs and COMMITs)`);
  console.log("µs a record  calls      µs a call  statement");
  for (const [source, e] of all.slice(0, shown)) {
    const text = source.replace(/\s+/g, " ").trim().slice(0, 72);
    console.log(`${(e.micros / n).toFixed(2).padStart(11)}  ${String(e.calls).padEnd(9)}  ${(e.micros / e.calls).toFixed(2).padStart(9)}  ${text}`);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

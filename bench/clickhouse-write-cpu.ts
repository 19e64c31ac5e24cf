/**
 * reqlog's own CPU for a Write on ClickHouse, step by step, in-process (no
 * ClickHouse, no gRPC), this build against another build's code in one run:
 * the bench's seeded forge requests as WriteRequest bytes of 1,000 records,
 * then for each batch the steps a server takes before it sends the INSERT:
 * decoding, validating (prepareWrite), the writer's rules (request-writer.ts)
 * and the INSERT's TabSeparated text. The sides alternate by round (same
 * bytes for both). Prints µs of CPU (process.cpuUsage, this thread) per
 * record for each step, medians of the rounds, and the ratio of the totals.
 * The end-to-end figure with a real server and ClickHouse is
 * bench:clickhouse-servers'. Then the bytes each step allocates a record, from
 * a child process with a young generation large enough that no collection
 * falls inside a step (heap used after the step less before it, a
 * collection forced before each step; the same bytes on a loaded machine).
 *   npm run bench:clickhouse-write-cpu -- <other checkout, built> [records [rounds]]   (default 100000, 7)
 */
import { execFileSync } from "node:child_process";
import { resolve } from "node:path";
import { PerformanceObserver } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { type WriteRequestSchema as Schema, WriteRequestSchema } from "../gen/reqlog/v1/log_service_pb.js";
import { printTable } from "./harness/peer-compare.js";
import { median, trafficRecords } from "./load.js";

/** The child that counts allocated bytes (see the header). */
const allocationsChild = process.argv[2] === "--allocations";
if (allocationsChild) process.argv.splice(2, 1);
if (!process.argv[2]) {
  console.error("usage: npm run bench:clickhouse-write-cpu -- <other checkout, built> [records [rounds]]");
  process.exit(2);
}
const other = resolve(process.argv[2]);
const n = Number(process.argv[3] ?? 100_000);
const rounds = Number(process.argv[4] ?? 7);
const batch = 1000;

/** The modules a side's steps come from: this build's or another checkout's dist/. */
interface WritePath {
  schema: typeof Schema;
  prepareWrite: typeof import("../src/write/prepare-batches.js").prepareWrite;
  limits: typeof import("../src/limits.js").defaultLimits;
  privacy: typeof import("../src/write/privacy.js").defaultPrivacy;
  createCommittedWrites: typeof import("../src/store/committed-writes.js").createCommittedWrites;
  createRequestWriter: typeof import("../src/store/clickhouse/write/request-writer.js").createRequestWriter;
  changesText: typeof import("../src/store/clickhouse/write/request-writer.js").changesText;
}

/** A build's write path; `root` is the folder holding its compiled `src/` and `gen/` (dist/). */
async function writePath(root: string): Promise<WritePath> {
  const load = (path: string) => import(pathToFileURL(resolve(root, path)).href);
  const [gen, prepare, limits, privacy, committed, writer] = await Promise.all([
    load("gen/reqlog/v1/log_service_pb.js"),
    load("src/write/prepare-batches.js"),
    load("src/limits.js"),
    load("src/write/privacy.js"),
    load("src/store/committed-writes.js"),
    load("src/store/clickhouse/write/request-writer.js"),
  ]);
  return {
    schema: gen.WriteRequestSchema,
    prepareWrite: prepare.prepareWrite,
    limits: limits.defaultLimits,
    privacy: privacy.defaultPrivacy,
    createCommittedWrites: committed.createCommittedWrites,
    createRequestWriter: writer.createRequestWriter,
    changesText: writer.changesText,
  };
}

function encodedBatches(): Uint8Array[] {
  const out: Uint8Array[] = [];
  let logs = [];
  for (const log of trafficRecords(n, 42)) {
    logs.push(log);
    if (logs.length === batch) {
      out.push(toBinary(WriteRequestSchema, create(WriteRequestSchema, { log: logs })));
      logs = [];
    }
  }
  return out;
}

const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

const stepNames = ["decode", "prepare", "writer", "text", "total"] as const;
type Step = (typeof stepNames)[number];

/** One round of a side: every batch through its steps; µs of CPU a record for each step. */
function round(path: WritePath, batches: Uint8Array[]): Record<Step, number> {
  const t = { decode: 0, prepare: 0, writer: 0, text: 0, total: 0 };
  const notes = path.createCommittedWrites();
  // A server with its HTTP port on counts what it stores (the request metrics): an observer watches.
  notes.observe({ finished: () => {} }, new AbortController().signal);
  let seq = 1n << 60n;
  const start = cpuUs();
  for (const bytes of batches) {
    let at = cpuUs();
    const request = fromBinary(path.schema, bytes, { readUnknownFields: false });
    let next = cpuUs();
    t.decode += next - at;
    at = next;
    const prepared = path.prepareWrite(request, path.limits, path.privacy);
    next = cpuUs();
    t.prepare += next - at;
    at = next;
    const writer = path.createRequestWriter({ rows: new Map(), lines: new Map() }, () => seq++, notes, path.limits);
    const now = BigInt(Date.now()) * 1000n;
    for (const record of prepared.records) writer.writeRecord(record, now);
    next = cpuUs();
    t.writer += next - at;
    at = next;
    const text = path.changesText(writer.changes, "group");
    if (text.length === 0) throw new Error("no text");
    notes.commit();
    t.text += cpuUs() - at;
  }
  t.total = cpuUs() - start;
  const records = batches.length * batch;
  for (const step of stepNames) t[step] /= records;
  return t;
}

/** Bytes allocated a record by each step of one round: heap used after a step less before it, a collection forced before each. */
function allocationRound(path: WritePath, batches: Uint8Array[]): Record<Step, number> {
  const gc = (globalThis as unknown as { gc: () => void }).gc;
  const t = { decode: 0, prepare: 0, writer: 0, text: 0, total: 0 };
  const notes = path.createCommittedWrites();
  notes.observe({ finished: () => {} }, new AbortController().signal);
  let seq = 1n << 60n;
  const used = () => process.memoryUsage().heapUsed;
  for (const bytes of batches) {
    gc();
    let at = used();
    const request = fromBinary(path.schema, bytes, { readUnknownFields: false });
    t.decode += used() - at;
    gc();
    at = used();
    const prepared = path.prepareWrite(request, path.limits, path.privacy);
    t.prepare += used() - at;
    gc();
    at = used();
    const writer = path.createRequestWriter({ rows: new Map(), lines: new Map() }, () => seq++, notes, path.limits);
    const now = BigInt(Date.now()) * 1000n;
    for (const record of prepared.records) writer.writeRecord(record, now);
    t.writer += used() - at;
    gc();
    at = used();
    const text = path.changesText(writer.changes, "group");
    if (text.length === 0) throw new Error("no text");
    notes.commit();
    t.text += used() - at;
  }
  t.total = t.decode + t.prepare + t.writer + t.text;
  const records = batches.length * batch;
  for (const step of stepNames) t[step] /= records;
  return t;
}

/** The child's work: a warm round, then one counted round a side; prints the bytes as JSON and how many collections it saw. */
async function countAllocations(sides: { path: WritePath }[], batches: Uint8Array[]) {
  let collections = 0;
  const observer = new PerformanceObserver((list) => {
    collections += list.getEntries().length;
  });
  observer.observe({ entryTypes: ["gc"] });
  for (const side of sides) round(side.path, batches);
  await new Promise((r) => setTimeout(r, 50));
  const before = collections;
  const bytes = sides.map((side) => allocationRound(side.path, batches));
  await new Promise((r) => setTimeout(r, 50));
  observer.disconnect();
  // Forced: four a batch a side. More means a collection fell inside a step (its bytes undercounted).
  const unforced = collections - before - 4 * batches.length * sides.length;
  console.log(JSON.stringify({ bytes, unforced }));
}

async function main() {
  const sides = [
    { name: "this build", path: await writePath(fileURLToPath(new URL("..", import.meta.url))) },
    { name: `build at ${other}`, path: await writePath(`${other}/dist`) },
  ];
  const batches = encodedBatches();
  if (allocationsChild) return countAllocations(sides, batches);
  const figures = sides.map(() => Object.fromEntries(stepNames.map((s) => [s, [] as number[]])) as Record<Step, number[]>);
  for (const side of sides) round(side.path, batches); // warm
  for (let r = 0; r < rounds; r++) {
    for (const [i, side] of sides.entries()) {
      const t = round(side.path, batches);
      for (const step of stepNames) figures[i]![step].push(t[step]);
    }
  }
  console.log(`${(batches.length * batch).toLocaleString()} records in batches of ${batch}, ${rounds} rounds, sides alternating; µs of CPU a record (median):`);
  printTable(
    stepNames.map((step) => ({ label: step, unit: "µs", values: figures.map((f) => median(f[step])) })),
    sides.map((s) => s.name),
  );
  const script = fileURLToPath(import.meta.url);
  const child = execFileSync(
    process.execPath,
    ["--expose-gc", "--min-semi-space-size=64", "--max-semi-space-size=64", script, "--allocations", other, String(n), "1"],
    { encoding: "utf8", maxBuffer: 1 << 20 },
  );
  const counted = JSON.parse(child.trim().split("\n").pop()!) as { bytes: Record<Step, number>[]; unforced: number };
  console.log(`Bytes allocated a record (one round a side, in a child with a 64 MB young generation${counted.unforced > 0 ? `; ${counted.unforced} collections fell inside steps, figures low` : ""}):`);
  printTable(
    stepNames.map((step) => ({ label: step, unit: "B", values: counted.bytes.map((b) => b[step]) })),
    sides.map((s) => s.name),
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

/**
 * App-line ingest over the Ingest stream vs raw better-sqlite3 inserts of the
 * same lines stored as reqlog stores them (a blob per request), on the same
 * machine in one run; each side's timer covers storing only.
 * reqlog runs as `reqlog serve` in a child process; the raw inserts run here.
 *   npm run bench:ingest -- [lines]      (default 2,000,000)
 */
import { create, toBinary } from "@bufbuild/protobuf";
import Database from "better-sqlite3";
import {
  type IngestRequest,
  IngestRequestSchema,
  type RequestLines,
  RequestLinesSchema,
  UserAppLogLineSchema,
} from "../gen/reqlog/v1/log_service_pb.js";
import { createLogServiceClient } from "../src/client/log-service-client.js";
import { createRandom } from "./forge-traffic.js";
import { startChildServer } from "./harness/child-server.js";
import { benchDbPath, benchStart, median } from "./load.js";

const total = Number(process.argv[2] ?? 2_000_000);
const perBatch = 1000;
const perRequest = 10;
const messages = [
  "resolving ref main", "listing commits", "serving artifact from object storage", "Stars are disabled.",
  "webhook not found", "signed URL expired", "created branch from old_ref_name", "fork scheduled",
];

/** The lines, as (request, time, level, message), the same for both sides. */
function* lines() {
  const r = createRandom(7);
  for (let i = 0; i < total; i++) {
    yield { request: Math.floor(i / perRequest), time: benchStart + BigInt(i * 50), level: r.int(5), message: r.pick(messages) };
  }
}

/** The lines as Ingest batches of `perBatch` lines, each request's lines together (the same for both sides). */
function ingestBatches(): IngestRequest[] {
  const batches: IngestRequest[] = [];
  let batch = create(IngestRequestSchema, { batchId: 0n });
  let entry: RequestLines | undefined;
  let entryRequest = -1;
  let count = 0;
  for (const line of lines()) {
    if (!entry || entryRequest !== line.request) {
      entry = create(RequestLinesSchema, { appId: "forge", versionId: "v42", requestId: new TextEncoder().encode(String(line.request)) });
      entryRequest = line.request;
      batch.lines.push(entry);
    }
    entry.line.push(create(UserAppLogLineSchema, { timestampUsec: line.time, level: BigInt(line.level), message: line.message }));
    if (++count % perBatch === 0) {
      batches.push(batch);
      batch = create(IngestRequestSchema, { batchId: BigInt(count / perBatch) });
      entry = undefined;
    }
  }
  if (batch.lines.length > 0) batches.push(batch);
  return batches;
}

async function viaIngest(): Promise<number> {
  // The server runs as `reqlog serve` in a process of its own, as it would in
  // production: the client's encoding here shares no thread with it.
  const server = await startChildServer(["--db", benchDbPath("ingest"), "--listen", "127.0.0.1:0", "--sync", "full"]);
  const client = createLogServiceClient({ server: server.address });
  // The batches are built before the clock starts, as an app server's buffer
  // would hold them: what is timed is sending, storing and acknowledging.
  const batches = ingestBatches();

  // The stream pulls the next batch as HTTP/2 flow control lets it send.
  async function* send() {
    yield* batches;
  }
  const started = performance.now();
  let acked = 0;
  for await (const ack of client.ingest(send())) acked += ack.lines;
  const seconds = (performance.now() - started) / 1000;
  if (acked !== total) throw new Error(`acknowledged ${acked} lines of ${total}`);
  client.close();
  await server.stop();
  return total / seconds;
}

/**
 * The baseline stores lines as reqlog now does, one blob per request (its lines
 * together, here as their protobuf), 100 requests (1,000 lines) a transaction;
 * the blobs are made before the clock starts, as the Ingest side's batches are,
 * so what is timed on each side is storing.
 */
function rawSqlite(): number {
  const db = new Database(benchDbPath("raw"));
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  db.exec("CREATE TABLE request_lines (request_key INTEGER PRIMARY KEY, lines BLOB NOT NULL)");
  const insert = db.prepare("INSERT INTO request_lines VALUES (?, ?)");
  const commit = db.transaction((rows: { request: number; blob: Uint8Array }[]) => {
    for (const row of rows) insert.run(row.request, row.blob);
  });
  const transactions: { request: number; blob: Uint8Array }[][] = [];
  for (const batch of ingestBatches()) {
    transactions.push(batch.lines.map((entry) => ({ request: Number(new TextDecoder().decode(entry.requestId)), blob: toBinary(RequestLinesSchema, entry) })));
  }
  const started = performance.now();
  for (const rows of transactions) commit(rows);
  const rate = total / ((performance.now() - started) / 1000);
  db.close();
  return rate;
}

/** Rounds of baseline then Ingest, so both meet the same disk (its fsync times drift on a shared VM). */
const rounds = 3;

async function main() {
  const raws: number[] = [];
  const ingests: number[] = [];
  for (let round = 1; round <= rounds; round++) {
    raws.push(rawSqlite());
    ingests.push(await viaIngest());
    console.log(`  round ${round}: raw ${Math.round(raws.at(-1)!).toLocaleString()} lines/s, Ingest ${Math.round(ingests.at(-1)!).toLocaleString()} lines/s, ${(ingests.at(-1)! / raws.at(-1)!).toFixed(2)}x`);
  }
  const raw = median(raws);
  const ingest = median(ingests);
  console.log(`App-line ingest, ${total.toLocaleString()} lines in batches of ${perBatch} (synchronous=FULL both), median of ${rounds} rounds:`);
  console.log(`  raw better-sqlite3 inserts, a blob per request (baseline): ${Math.round(raw).toLocaleString()} lines/s`);
  console.log(`  Ingest stream, end to end over gRPC:                       ${Math.round(ingest).toLocaleString()} lines/s   ${(ingest / raw).toFixed(2)}x`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

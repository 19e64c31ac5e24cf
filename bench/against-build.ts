/**
 * This build of reqlog against another build (another checkout, e.g. a
 * worktree of an earlier commit with its own `npm run build`), in one run:
 * the same seeded forge requests written to each one's `reqlog serve` (Write,
 * 1,000 records a call, sides alternating by 100,000 records; each server's
 * CPU per record), then the same reads asked of both in alternating rounds:
 * first page and page 1000 of a one-day window, a selective regex and a
 * regex no index narrows over every app, Usage hourly per version over the
 * span, and Stats hourly with its top lists over the span. Each side keeps
 * its own database; what changed between the builds is what the ratio shows.
 *   npm run bench:against -- <other checkout> [requests]     (default 1000000)
 */
import { join, resolve } from "node:path";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { LogReadRequestSchema } from "../gen/reqlog/v1/log_service_pb.js";
import {
  alternating,
  type Figure,
  printTable,
  reqlogOffsetAt,
  reqlogTarget,
  serveReqlog,
  stopReqlog,
  type WriteTarget,
  writeEachMeasured,
} from "./harness/peer-compare.js";
import { benchStart } from "./load.js";
import { selectivePattern, trafficApps, unindexablePattern } from "./search-patterns.js";

const other = process.argv[2];
if (!other) {
  console.error("usage: npm run bench:against -- <other checkout, built> [requests]");
  process.exit(2);
}
const n = Number(process.argv[3] ?? 1_000_000);

async function main() {
  const sides = ["this build", `build at ${resolve(other!)}`];
  const ours = await serveReqlog("against-this");
  const theirs = await serveReqlog("against-other", [], join(resolve(other!), "dist", "src", "main.js"));
  const servers = [ours, theirs];
  console.log(`${n.toLocaleString()} requests to each side …`);
  const writes = await writeEachMeasured(servers.map((s) => reqlogTarget(s.address, s) as WriteTarget<unknown>), n, 1000, 4, 42);
  const figures: Figure[] = [
    { label: "Write, 1,000 records a call, 4 in flight (records/s)", values: writes.map((w) => w.rate), unit: "" },
    { label: "  server CPU per stored record (µs; process CPU ÷ records)", values: writes.map((w) => w.cpuPerRecord), unit: "" },
  ];

  const read = (i: number, init: MessageInitShape<typeof LogReadRequestSchema>) => servers[i]!.client.read(init);
  const newest = (await read(0, { appId: "forge", count: 1n })).log[0]!.endTime;
  const firstPage = { appId: "forge", startTime: newest - 86_400_000_000n, endTime: newest + 1n, count: 100n };
  const first = await alternating(5, 10, servers.map((_, i) => () => read(i, firstPage)));
  figures.push({ label: "Read first page (100, one-day window) (ms)", values: first, unit: "" });
  // Page 1000 (smaller runs have fewer pages: their deepest is compared), each side by its own offsets.
  const depth = Math.min(1000, Math.floor((n * 0.8) / 100));
  const offsets = await Promise.all(servers.map((_, i) => reqlogOffsetAt((init) => read(i, init), firstPage, (depth - 1) * 100)));
  const deep = await alternating(5, 10, servers.map((_, i) => () => read(i, { ...firstPage, offset: { requestId: offsets[i]! } })));
  figures.push({ label: `Read page ${depth} (ms)`, values: deep, unit: "" });
  for (const [label, pattern] of [
    ["Selective regex over every app, first 1,000 of each (ms)", selectivePattern],
    ["Regex no index narrows (5xx), first 1,000 of each app (ms)", unindexablePattern],
  ] as const) {
    const matches = [0, 0];
    const times = await alternating(3, 2, servers.map((_, i) => async () => {
      matches[i] = 0;
      for (const appId of trafficApps) {
        matches[i]! += (await read(i, { appId, count: 1000n, includeIncomplete: true, startTime: benchStart, combinedLogRegex: pattern })).log.length;
      }
    }));
    if (matches[0] !== matches[1]) throw new Error(`${pattern}: this build matched ${matches[0]} requests, the other ${matches[1]}`);
    figures.push({ label: `${label}, ${matches[0]} matches`, values: times, unit: "" });
  }
  const span = { startTime: benchStart, endTime: newest + 3_600_000_000n };
  const usage = await alternating(5, 10, servers.map((s) => () =>
    s.client.usage({ appId: "forge", startTime: Number(span.startTime / 1_000_000n), endTime: Number(span.endTime / 1_000_000n) })));
  figures.push({ label: "Usage, hourly per version over the span (ms)", values: usage, unit: "" });
  const stats = await alternating(5, 4, servers.map((s) => () => s.client.stats({ appId: "forge", ...span, topN: 10 })));
  figures.push({ label: "Stats, hourly over the span with top lists (ms)", values: stats, unit: "" });
  for (const s of servers) await stopReqlog(s);
  printTable(figures, sides);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

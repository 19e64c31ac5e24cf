import { create, toBinary } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type RequestLog,
  RequestLogSchema,
  UserAppLogGroupSchema,
  UserAppLogLineSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { minimalLog, rid } from "../helpers/fixtures.js";
import { useTestServer } from "../helpers/test-server.js";

// One server for the one test: each of its runs works in an app of its own.
const ts = useTestServer();
const never = new AbortController().signal;

const h0 = 1_795_003_200n * 1_000_000n;
const hourUs = 3_600_000_000n;

type Op =
  | { kind: "write"; req: number; version: number; finished: boolean; endHour: number; offset: number; lines: number; text: number }
  | { kind: "flush"; req: number; lines: number; text: number }
  | { kind: "clock"; hours: number }
  | { kind: "expire"; beforeHour: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant("write" as const), req: fc.nat(12), version: fc.nat(2), finished: fc.boolean(), endHour: fc.nat(6), offset: fc.nat(3_599_999_999), lines: fc.nat(3), text: fc.nat(40) }), weight: 5 },
  { arbitrary: fc.record({ kind: fc.constant("flush" as const), req: fc.nat(12), lines: fc.integer({ min: 1, max: 3 }), text: fc.nat(200) }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant("clock" as const), hours: fc.integer({ min: 0, max: 2 }) }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant("expire" as const), beforeHour: fc.nat(8) }), weight: 1 },
);

/** The recount: every stored request, read back, sized as Usage defines it. */
async function recount(app: string) {
  const rows = ts.db
    .prepare(`SELECT r.request_id, r.sort_time, r.has_record, v.version_id FROM requests r
      JOIN apps a ON a.id = r.app_key JOIN versions v ON v.id = r.version_key WHERE a.app_id = ?`)
    .safeIntegers(true)
    .all(app) as { request_id: Buffer; sort_time: bigint; has_record: bigint; version_id: string }[];
  const buckets = new Map<string, { hour: number; version: string; requests: number; bytes: number; lines: number }>();
  for (const row of rows) {
    const [log] = (await ts.backend.store.getRequests(app, [new Uint8Array(row.request_id)], never)) as [RequestLog];
    const withLines = toBinary(RequestLogSchema, log).length;
    const withoutLines = toBinary(RequestLogSchema, { ...log, line: [] }).length;
    const hour = Number(row.sort_time / hourUs);
    const key = `${hour}/${row.version_id}`;
    const b = buckets.get(key) ?? { hour, version: row.version_id, requests: 0, bytes: 0, lines: 0 };
    b.requests += Number(row.has_record);
    b.bytes += row.has_record ? withLines : withLines - withoutLines;
    b.lines += log.line.length;
    buckets.set(key, b);
  }
  return [...buckets.values()];
}

let run = 0;

describe("usage rollups (property)", () => {
  it("always equal a recount from the raw rows, after random writes, updates, flushes and deletions", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 25 }), fc.nat(3), async (ops, resolution) => {
        const app = `usage-${run++}`;
        let clock = h0 + 10n * hourUs;
        for (const op of ops) {
          ts.setNow(clock);
          const text = (n: number) => "m".repeat(n % 200) + "\u00e9".repeat(n % 3);
          if (op.kind === "write") {
            const end = h0 + BigInt(op.endHour) * hourUs + BigInt(op.offset);
            await ts.write(
              minimalLog({
                appId: app, requestId: rid(`r${op.req}`), versionId: `v${op.version}`, startTime: h0,
                finished: op.finished, endTime: op.finished ? end : 0n, userAgent: text(op.text),
                line: Array.from({ length: op.lines }, (_, i) => ({ $typeName: "reqlog.v1.LogLine" as const, time: h0 + BigInt(i), level: i % 5, logMessage: text(op.text + i) })),
              }),
            );
          } else if (op.kind === "flush") {
            const logs = toBinary(UserAppLogGroupSchema, create(UserAppLogGroupSchema, {
              logLine: Array.from({ length: op.lines }, (_, i) => create(UserAppLogLineSchema, { timestampUsec: h0 + BigInt(op.text + i), level: 2n, message: text(op.text) })),
            }));
            await ts.client.flush({ logs }, {
              headers: { "reqlog-app-id": app, "reqlog-version-id": "v0", "reqlog-request-id": `r${op.req}` },
            });
          } else if (op.kind === "clock") {
            clock += BigInt(op.hours) * hourUs;
          } else {
            await ts.backend.maintenance.expire(h0 + BigInt(op.beforeHour) * hourUs, 1_000_000, never);
          }
        }

        const expected = (await recount(app)).filter((b) => b.requests > 0 || b.lines > 0);
        const r = await ts.client.usage({ appId: app });
        const got = r.usage.map((u) => ({
          hour: u.startTime / 3600, version: u.versionId, requests: Number(u.count), bytes: Number(u.totalSize), lines: u.records,
        }));
        const order = (a: { hour: number; version: string }, b: { hour: number; version: string }) =>
          a.hour - b.hour || (a.version < b.version ? -1 : 1);
        expect(got).toEqual(expected.sort(order));

        // Coarser buckets and combined versions are sums of the same rollups.
        const width = resolution + 1;
        const combined = await ts.client.usage({ appId: app, resolutionHours: width, combineVersions: true });
        const total = (xs: { requests: number; bytes: number; lines: number }[]) =>
          xs.reduce((s, x) => ({ requests: s.requests + x.requests, bytes: s.bytes + x.bytes, lines: s.lines + x.lines }), { requests: 0, bytes: 0, lines: 0 });
        expect(total(combined.usage.map((u) => ({ requests: Number(u.count), bytes: Number(u.totalSize), lines: u.records })))).toEqual(total(expected));
        expect(Number(r.summary!.totalSize)).toBe(total(expected).bytes);
      }),
      { numRuns: 120 },
    );
  });
});

import { create, toBinary } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { UserAppLogGroupSchema, UserAppLogLineSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { formatCombined } from "../../src/format/combined-line.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { type ReadInit, useTestServer } from "../helpers/test-server.js";

const ts = useTestServer();

/** The model of one stored request, as the contract describes it. */
interface Model {
  order: number; // creation order: the tie-break the server's row ids follow
  app: string;
  version: string;
  requestId: string;
  finished: boolean;
  hasRecord: boolean;
  sortTime: bigint;
  status: number;
  host: string;
  maxLevel: number;
}

type Op =
  | { kind: "write"; req: number; version: number; finished: boolean; end: number; status: number; host: number }
  | { kind: "flush"; req: number; level: number };

interface Filter {
  includeIncomplete: boolean;
  version?: number;
  minimumLogLevel?: number;
  window?: [number, number];
  statusRegex?: number;
  hostRegex?: number;
}

const versions = ["v1", "v2", "v3"];
const hosts = ["", "forge.example", "dl.forge.example"];
const statuses = [200, 302, 401, 403, 404];
const statusRegexes = ['" 40[134] ', '" 302 '];
const hostRegexes = ["^dl\\.", "forge"];

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant("write" as const),
    req: fc.nat(14),
    version: fc.nat(2),
    finished: fc.boolean(),
    end: fc.nat(3), // few distinct end times: many ties
    status: fc.nat(statuses.length - 1),
    host: fc.nat(hosts.length - 1),
  }),
  fc.record({ kind: fc.constant("flush" as const), req: fc.nat(14), level: fc.nat(4) }),
);

/** Mostly absent, so that most pages are not empty. */
const sometimes = <T>(arb: fc.Arbitrary<T>) =>
  fc.oneof({ arbitrary: fc.constant(undefined), weight: 4 }, { arbitrary: arb, weight: 1 });

const filterArb: fc.Arbitrary<Filter> = fc
  .record({
    includeIncomplete: fc.boolean(),
    version: sometimes(fc.nat(2)),
    minimumLogLevel: sometimes(fc.nat(4)),
    window: sometimes(
      fc.tuple(fc.nat(8), fc.nat(8)).map(([a, b]) => [Math.min(a, b), Math.max(a, b) + 1] as [number, number]),
    ),
    statusRegex: sometimes(fc.nat(statusRegexes.length - 1)),
    hostRegex: sometimes(fc.nat(hostRegexes.length - 1)),
  })
  .map((f) => Object.fromEntries(Object.entries(f).filter(([, v]) => v !== undefined)) as unknown as Filter);

let run = 0;
/** Runs whose result had records tied on sort time: the tie-break was exercised. */
let runsWithTies = 0;

describe("paging (property)", () => {
  it("walks exactly the matching records, newest first, with no skip or repeat, even with updates between pages", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(opArb, { minLength: 8, maxLength: 30 }),
        filterArb,
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.array(opArb, { maxLength: 3 }), { maxLength: 8 }),
        async (initial, filter, count, between) => {
          run++;
          const app = `prop-${run}`;
          const models = new Map<string, Model>();
          let created = 0;
          let clock = t0 + 1_000_000n;

          const apply = async (op: Op) => {
            clock += 10n;
            ts.setNow(clock);
            const requestId = `r${op.req}`;
            const existing = models.get(requestId);
            if (op.kind === "write") {
              const end = t0 + BigInt(op.end) * 100n;
              await ts.write(minimalLog({
                appId: app, versionId: versions[op.version], requestId: rid(requestId), startTime: t0,
                endTime: op.finished ? end : 0n, finished: op.finished, status: statuses[op.status],
                ...(hosts[op.host] ? { host: hosts[op.host] } : {}),
              }));
              if (existing && existing.hasRecord && existing.finished && !op.finished) return;
              const m = existing ?? { order: created++, app, requestId, maxLevel: -1 } as Model;
              Object.assign(m, {
                version: versions[op.version], finished: op.finished, hasRecord: true,
                sortTime: op.finished ? end : clock, status: statuses[op.status], host: hosts[op.host],
              });
              models.set(requestId, m);
            } else {
              const logs = toBinary(UserAppLogGroupSchema, create(UserAppLogGroupSchema, {
                logLine: [create(UserAppLogLineSchema, { timestampUsec: t0 + 5n, level: BigInt(op.level), message: "m" })],
              }));
              await ts.client.flush({ logs }, {
                headers: { "reqlog-app-id": app, "reqlog-version-id": "v1", "reqlog-request-id": requestId },
              });
              if (existing) {
                existing.maxLevel = Math.max(existing.maxLevel, op.level);
                if (!existing.finished) existing.sortTime = clock;
              } else {
                models.set(requestId, {
                  order: created++, app, requestId, version: "v1", finished: false, hasRecord: false,
                  sortTime: clock, status: 0, host: "", maxLevel: op.level,
                });
              }
            }
          };

          const combinedOf = (m: Model) =>
            formatCombined(minimalLog({ status: m.hasRecord ? m.status : 0, ...(m.hasRecord ? {} : { method: "", resource: "" }), endTime: m.finished ? m.sortTime : 0n }));
          const matchesValues = (m: Model) =>
            (filter.includeIncomplete || m.finished) &&
            (filter.version === undefined || m.version === versions[filter.version]) &&
            (filter.minimumLogLevel === undefined || m.maxLevel >= filter.minimumLogLevel) &&
            (filter.statusRegex === undefined || new RegExp(statusRegexes[filter.statusRegex]!).test(combinedOf(m))) &&
            (filter.hostRegex === undefined || new RegExp(hostRegexes[filter.hostRegex]!).test(m.host));
          const inWindow = (key: bigint) =>
            !filter.window || (key >= t0 + BigInt(filter.window[0]) * 100n && key < t0 + BigInt(filter.window[1]) * 100n);

          for (const op of initial) await apply(op);

          // The order as it stands when the first page is read.
          const atSnapshot = new Map([...models].map(([id, m]) => [id, { ...m }]));
          const keyAtSnapshot = (id: string) => atSnapshot.get(id)!.sortTime;
          const reference = [...atSnapshot.values()]
            .filter((m) => matchesValues(m) && inWindow(m.sortTime))
            .sort((a, b) => (a.sortTime !== b.sortTime ? (a.sortTime > b.sortTime ? -1 : 1) : b.order - a.order))
            .map((m) => m.requestId);
          // Records that keep matching at every page must come exactly once.
          const alwaysMatching = new Set(reference);

          const request = (offset?: Uint8Array): ReadInit => ({
            appId: app,
            count: BigInt(count),
            includeIncomplete: filter.includeIncomplete,
            ...(filter.version !== undefined ? { moduleVersion: [{ versionId: versions[filter.version] }] } : {}),
            ...(filter.minimumLogLevel !== undefined ? { minimumLogLevel: filter.minimumLogLevel } : {}),
            ...(filter.window
              ? { startTime: t0 + BigInt(filter.window[0]) * 100n, endTime: t0 + BigInt(filter.window[1]) * 100n }
              : {}),
            ...(filter.statusRegex !== undefined ? { combinedLogRegex: statusRegexes[filter.statusRegex] } : {}),
            ...(filter.hostRegex !== undefined ? { hostRegex: hostRegexes[filter.hostRegex] } : {}),
            ...(offset ? { offset: { requestId: offset } } : {}),
          });

          const seen: string[] = [];
          let offset: Uint8Array | undefined;
          let pages = 0;
          do {
            const page = await ts.read(request(offset));
            for (const log of page.log) seen.push(new TextDecoder().decode(log.requestId));
            expect(page.log.length).toBeLessThanOrEqual(count);
            offset = page.offset?.requestId;
            if (offset) expect(page.log.length).toBe(count); // no budget is hit at this size
            for (const op of between[pages] ?? []) {
              await apply(op);
            }
            for (const id of alwaysMatching) {
              const m = models.get(id)!;
              if (!matchesValues(m)) alwaysMatching.delete(id);
            }
            pages++;
          } while (offset && pages < 100);

          expect(new Set(seen).size).toBe(seen.length); // no repeat
          const keysSeen = seen.map((id) => keyAtSnapshot(id));
          if (new Set(keysSeen).size < keysSeen.length) runsWithTies++;
          const mutated = between.slice(0, pages - 1).some((ops) => ops.length > 0);
          if (!mutated) {
            expect(seen).toEqual(reference);
          } else {
            for (const id of alwaysMatching) expect(seen).toContain(id); // no skip
            for (const id of seen) expect(atSnapshot.has(id)).toBe(true); // nothing newer than the snapshot
            const keys = seen.map((id) => [keyAtSnapshot(id), atSnapshot.get(id)!.order] as const);
            for (let i = 1; i < keys.length; i++) {
              const [k0, o0] = keys[i - 1]!;
              const [k1, o1] = keys[i]!;
              expect(k0 > k1 || (k0 === k1 && o0 > o1)).toBe(true); // snapshot order
            }
          }
        },
      ),
      { numRuns: 150 },
    );
    // The property is only as good as its data: ties must have come up often.
    expect(runsWithTies).toBeGreaterThan(20);
  });
});

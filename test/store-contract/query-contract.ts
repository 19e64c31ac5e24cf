/**
 * The store contract's queries (docs/query.md): every backend answers random
 * queries over random traffic with the rows the reference evaluator
 * (test/helpers/query-reference.ts) gives over the records the backend
 * itself returns by id; from the rows (Store.query) and, where the planner
 * says so, from the Stats rollups (the service's answerFromRollups over
 * Store.stats). Then the bounds: the scan budget, the row limit, and the
 * search index (or SQL) finding a few matches among many rows whole.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { clone } from "@bufbuild/protobuf";
import { type RequestLog, RequestLogSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { latencyBucket } from "../../src/domain/latency-histogram.js";
import { defaultLimits, type Limits } from "../../src/limits.js";
import { planQuery, type QueryPlan } from "../../src/query/logsql/plan-query.js";
import type { Value } from "../../src/query/logsql/query-value.js";
import { answerFromRollups } from "../../src/service/query-rollups.js";
import type { Store, WriteResult } from "../../src/store/store.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { queryNow, queryText, trafficRecord } from "../helpers/query-arbitraries.js";
import { referenceQuery, type RefValue } from "../helpers/query-reference.js";

export interface QueryHarness {
  readonly store: Store;
  write(...logs: RequestLog[]): Promise<WriteResult>;
}

const signal = new AbortController().signal;
const limitsOf = (limits: Partial<Limits> = {}): Limits => ({ ...defaultLimits, readScanRows: 1e9, readScanMs: 600_000, ...limits });
const plan = (appId: string, text: string, limits?: Partial<Limits>, now = queryNow) => planQuery({ appId, text }, limitsOf(limits), now);
const rowPlan = (p: QueryPlan): QueryPlan => ({ ...p, rollup: undefined });

const sortedRows = (rows: readonly (Value | RefValue)[][]) => rows.map((r) => JSON.stringify(r)).sort();

/** Rows compared as the query defines them: in order, unless the order is only "newest first" (equal times may tie). */
function expectRows(p: QueryPlan, got: Value[][], want: RefValue[][], sameBucket: Set<number> = new Set()) {
  const ordered = p.query.pipes.some((x) => x.kind === "stats" || x.kind === "sort" || x.kind === "top");
  const norm = (rows: readonly (Value | RefValue)[][]) =>
    rows.map((r) => r.map((v, i) => (sameBucket.has(i) && typeof v === "number" ? `bucket ${latencyBucket(v)}` : v)));
  if (ordered) expect(norm(got)).toEqual(norm(want));
  else expect(sortedRows(norm(got))).toEqual(sortedRows(norm(want)));
}

export function describeQueries(h: QueryHarness, runs: number): void {
  describe("query", () => {
    it("answers random queries over random traffic as the reference evaluator does, from rows and from rollups", async () => {
      let run = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.array(trafficRecord, { minLength: 1, maxLength: 25 }), { minLength: 1, maxLength: 3 }),
          fc.array(queryText, { minLength: 1, maxLength: 4 }),
          async (writes, texts) => {
            const appId = `q${run++}`;
            for (const batch of writes) await h.write(...batch.map((log) => Object.assign(clone(RequestLogSchema, log), { appId })));
            const stored = await h.store.getRequests(appId, Array.from({ length: 40 }, (_, i) => rid(`q${i}`)), signal);
            for (const text of texts) {
              const p = plan(appId, text);
              const want = referenceQuery(stored, text, queryNow);
              const got = await h.store.query(rowPlan(p), signal);
              expect({ text, columns: p.query.columns.map((c) => c.name) }).toEqual({ text, columns: want.columns });
              expect(got.total).toBeUndefined();
              expect(got.cut).toBe(false);
              expectRows(p, got.rows, want.rows);
              if (p.rollup) {
                const fromRollups = await answerFromRollups(p, h.store, limitsOf(), signal);
                if (fromRollups) {
                  // Latency quantiles from the histograms: in the bucket of the exact value.
                  const quantiles = new Set(
                    p.query.columns.flatMap((c, i) => {
                      const stats = p.query.pipes[0]!.kind === "stats" ? p.query.pipes[0]!.funcs : [];
                      return stats.some((f) => f.name === c.name && (f.fn === "quantile" || f.fn === "median")) ? [i] : [];
                    }),
                  );
                  expectRows(p, fromRollups.rows, want.rows, quantiles);
                }
              }
            }
          },
        ),
        { numRuns: runs },
      );
    });

    it("answers many random queries over one random traffic as the reference evaluator does", async () => {
      // One traffic (written in a few batches, so that requests are rewritten), then queries alone: cheap to ask many.
      const batches = fc.sample(fc.array(trafficRecord, { minLength: 30, maxLength: 40 }), { numRuns: 4, seed: 29 });
      for (const batch of batches) await h.write(...batch.map((log) => Object.assign(clone(RequestLogSchema, log), { appId: "many" })));
      const stored = await h.store.getRequests("many", Array.from({ length: 40 }, (_, i) => rid(`q${i}`)), signal);
      // Counterexamples found before (kept: each failed a backend once), then random ones.
      const found = ["(-level:>=3 OR method:GET)"];
      await fc.assert(
        fc.asyncProperty(fc.oneof(fc.constantFrom(...found), queryText), async (text) => {
          const p = plan("many", text);
          const want = referenceQuery(stored, text, queryNow);
          const got = await h.store.query(rowPlan(p), signal);
          expect({ text, total: got.total, cut: got.cut }).toEqual({ text, total: undefined, cut: false });
          expectRows(p, got.rows, want.rows);
        }),
        { numRuns: runs * 8 },
      );
    });

    it("answers from the newest requests within the scan budget, and says how many the range holds", async () => {
      await h.write(...Array.from({ length: 300 }, (_, i) => minimalLog({ requestId: rid(`b${i}`), endTime: t0 + BigInt(i) * 1000n })));
      const p = plan("forge", "* | fields request_id", { readScanRows: 50 });
      const result = await h.store.query(p, signal);
      if (result.total === undefined) {
        // A backend that answers whole within its bounds (SQL) gives every row.
        expect(result.rows).toHaveLength(300);
        return;
      }
      expect(result.total).toBe(300);
      expect(result.scanned).toBeGreaterThan(0);
      expect(result.scanned).toBeLessThan(300);
      const newest = new Set(Array.from({ length: result.scanned }, (_, i) => `b${299 - i}`));
      expect(result.rows.length).toBeGreaterThan(0);
      for (const [id] of result.rows) expect(newest.has(id as string)).toBe(true);
      const counted = await h.store.query(plan("forge", "* | stats count() n", { readScanRows: 50 }), signal);
      expect(counted.total).toBe(300);
      expect(counted.rows).toEqual([[counted.scanned]]);
    });

    it("cuts an answer at max-query-rows, newest first, and says so", async () => {
      await h.write(...Array.from({ length: 30 }, (_, i) => minimalLog({ requestId: rid(`c${i}`), endTime: t0 + BigInt(i) })));
      const result = await h.store.query(plan("forge", "* | fields request_id", { maxQueryRows: 10 }), signal);
      expect(result.cut).toBe(true);
      expect(result.rows).toEqual(Array.from({ length: 10 }, (_, i) => [`c${29 - i}`]));
      expect((await h.store.query(plan("forge", "* | fields request_id | limit 10", { maxQueryRows: 10 }), signal)).cut).toBe(false);
    });

    it("finds the few requests a phrase matches among many whole, however small the budget", async () => {
      const logs = Array.from({ length: 3000 }, (_, i) =>
        minimalLog({
          requestId: rid(`s${i}`),
          endTime: t0 + BigInt(i),
          resource: i % 1000 === 7 ? `/api/v1/repos/alice/app/actions/artifacts/${i}/zip/raw` : `/api/v1/repos/alice/app/commits?page=${i}`,
        }),
      );
      for (let i = 0; i < logs.length; i += 1000) await h.write(...logs.slice(i, i + 1000));
      const result = await h.store.query(plan("forge", '"zip/raw" | fields request_id', { readScanRows: 100 }), signal);
      expect(result.total).toBeUndefined();
      expect(result.rows).toEqual([["s2007"], ["s1007"], ["s7"]]);
      expect(result.source).not.toBe("scan");
    });

    it("finds the few requests a status filter keeps among many whole, however small the budget", async () => {
      const logs = Array.from({ length: 3000 }, (_, i) =>
        minimalLog({ requestId: rid(`e${i}`), endTime: t0 + BigInt(i), status: i % 1000 === 7 ? 503 : i % 1000 === 8 ? 502 : 200 }),
      );
      for (let i = 0; i < logs.length; i += 1000) await h.write(...logs.slice(i, i + 1000));
      const ids = await h.store.query(plan("forge", "status:>=500 | fields request_id", { readScanRows: 100 }), signal);
      expect(ids.total).toBeUndefined();
      expect(ids.rows).toEqual([["e2008"], ["e2007"], ["e1008"], ["e1007"], ["e8"], ["e7"]]);
      const counted = await h.store.query(plan("forge", "status:503 | stats by (status) count() n", { readScanRows: 100 }), signal);
      expect(counted.total).toBeUndefined();
      expect(counted.rows).toEqual([[503, 3]]);
    });

    it("reads only finished requests, each once at its latest version, of the plan's app only", async () => {
      await h.write(
        minimalLog({ requestId: rid("a"), endTime: t0 + 1n, status: 500 }),
        minimalLog({ requestId: rid("b"), endTime: t0 + 2n, status: 500, finished: false }),
        minimalLog({ appId: "other", requestId: rid("a"), endTime: t0 + 3n, status: 500 }),
      );
      await h.write(minimalLog({ requestId: rid("a"), endTime: t0 + 4n, status: 404 }));
      const rows = (q: string) => h.store.query(plan("forge", q), signal).then((r) => r.rows);
      expect(await rows("* | fields request_id, status")).toEqual([["a", 404]]);
      expect(await rows("status:500 | stats count()")).toEqual([[0]]);
      expect(await rows("* | stats count()")).toEqual([[1]]);
      expect((await h.store.query(plan("nothing-here", "* | stats count() n, max(status) m"), signal)).rows).toEqual([[0, null]]);
    });
  });
}

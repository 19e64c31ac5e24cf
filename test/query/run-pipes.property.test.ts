import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { RequestLog } from "../../gen/reqlog/v1/log_service_pb.js";
import { compileFilter } from "../../src/query/logsql/match-filter.js";
import { parseQuery } from "../../src/query/logsql/parse-query.js";
import { queryField } from "../../src/query/logsql/query-fields.js";
import { createPipeline } from "../../src/query/logsql/run-pipes.js";
import { queryNow, queryText, trafficRecord } from "../helpers/query-arbitraries.js";
import { referenceQuery, referenceRow } from "../helpers/query-reference.js";

/** The latest record of each id, in the order first written (as a store keeps them). */
function stored(records: RequestLog[]): RequestLog[] {
  const byId = new Map<string, RequestLog>();
  for (const r of records) byId.set(new TextDecoder().decode(r.requestId), r);
  return [...byId.values()];
}

/** The shared pipeline's answer: the filter and pipes backends run, over rows read as the reference reads them. */
function pipelineQuery(logs: RequestLog[], text: string) {
  const query = parseQuery(text, queryNow);
  const keep = compileFilter(query.filter, (f) => queryField(f)!.type);
  const pipeline = createPipeline(query, { maxQueryGroups: 10_000 });
  const rows = logs
    .map((log, i) => ({ log, i }))
    .filter(({ log }) => log.finished)
    .sort((a, b) => Number(b.log.endTime - a.log.endTime) || a.i - b.i);
  for (const { log } of rows) {
    const values = referenceRow(log);
    const row = { get: (f: string) => values[f] ?? null };
    if (keep(row) && !pipeline.push(row)) break;
  }
  return { columns: query.columns.map((c) => c.name), rows: pipeline.finish() };
}

describe("the query pipeline every backend runs", () => {
  it("answers random queries over random traffic as the reference evaluator does", () => {
    fc.assert(
      fc.property(fc.array(trafficRecord, { minLength: 5, maxLength: 60 }), queryText, (records, text) => {
        const logs = stored(records);
        const want = referenceQuery(logs, text, queryNow);
        const got = pipelineQuery(logs, text);
        expect(got.columns).toEqual(want.columns);
        expect(got.rows).toEqual(want.rows);
      }),
      { numRuns: 2000 },
    );
  });

  it("stops reading rows once a limit is reached", () => {
    const query = parseQuery("* | limit 2", queryNow);
    const pipeline = createPipeline(query, { maxQueryGroups: 10 });
    const row = { get: () => 1 };
    expect([pipeline.push(row), pipeline.push(row)]).toEqual([true, false]);
    expect(pipeline.finish()).toHaveLength(2);
  });

  it("refuses a stats pipe with more groups than max-query-groups, naming the limit", () => {
    const pipeline = createPipeline(parseQuery("* | stats by (status) count()", queryNow), { maxQueryGroups: 2 });
    expect(() => [200, 404, 500].forEach((s) => pipeline.push({ get: (f) => (f === "status" ? s : null) }))).toThrow(
      "number of groups is more than 2, over the limit max-query-groups=2: group by fewer or coarser fields, or narrow the filter",
    );
  });
});

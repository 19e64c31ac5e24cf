import { describe, expect, it } from "vitest";
import { parseQuery } from "../../src/query/logsql/parse-query.js";
import type { Filter } from "../../src/query/logsql/query-ast.js";
import { ReqlogError } from "../../src/reqlog-error.js";

const now = Date.UTC(2026, 10, 21, 12, 0, 0) * 1000; // 2026-11-21T12:00:00Z in µs
const filterOf = (q: string) => parseQuery(q, now).filter;

function refusal(q: string): string {
  try {
    parseQuery(q, now);
  } catch (err) {
    expect(err).toBeInstanceOf(ReqlogError);
    expect((err as ReqlogError).code).toBe(3); // INVALID_ARGUMENT
    return (err as ReqlogError).message;
  }
  throw new Error(`parsed: ${q}`);
}

describe("parseQuery: filters", () => {
  it("reads words, phrases and prefixes against _msg, and field:value against the field", () => {
    expect(filterOf("error")).toEqual({ kind: "phrase", field: "_msg", phrase: "error", prefix: false, anyCase: false });
    expect(filterOf('"zip/raw"')).toEqual({ kind: "phrase", field: "_msg", phrase: "zip/raw", prefix: false, anyCase: false });
    expect(filterOf("err*")).toEqual({ kind: "phrase", field: "_msg", phrase: "err", prefix: true, anyCase: false });
    expect(filterOf("method:POST")).toEqual({ kind: "phrase", field: "method", phrase: "POST", prefix: false, anyCase: false });
    expect(filterOf('user_agent:"curl/8.5"')).toMatchObject({ kind: "phrase", field: "user_agent", phrase: "curl/8.5" });
    // Tokens written together make one phrase, as LogsQL's getCompoundPhrase joins them.
    expect(filterOf("resource:/api/v1/admin/hooks")).toMatchObject({ field: "resource", phrase: "/api/v1/admin/hooks" });
    expect(filterOf("ip:10.0.3.7")).toMatchObject({ field: "ip", phrase: "10.0.3.7" });
    expect(filterOf('i("Not Found")')).toMatchObject({ kind: "phrase", phrase: "Not Found", anyCase: true });
    expect(filterOf("referrer:*")).toEqual({ kind: "phrase", field: "referrer", phrase: "", prefix: true, anyCase: false });
  });

  it("reads exact, in, regex and ipv4_range filters", () => {
    expect(filterOf('method:="GET"')).toEqual({ kind: "exact", field: "method", value: "GET", prefix: false });
    expect(filterOf('resource:="/api/v1/repos"*')).toEqual({ kind: "exact", field: "resource", value: "/api/v1/repos", prefix: true });
    expect(filterOf("method:!=GET")).toEqual({ kind: "not", filter: { kind: "exact", field: "method", value: "GET", prefix: false } });
    expect(filterOf("status:in(500, 502, 503)")).toEqual({ kind: "in", field: "status", values: ["500", "502", "503"] });
    expect(filterOf('resource:~"artifacts/\\\\d+/zip"')).toEqual({ kind: "regex", field: "resource", pattern: "artifacts/\\d+/zip" });
    expect(filterOf('ip:ipv4_range("10.0.0.0/8")')).toEqual({ kind: "ipv4Range", field: "ip", min: 167772160, max: 184549375 });
    expect(filterOf("ip:ipv4_range(10.0.0.1, 10.0.0.9)")).toEqual({ kind: "ipv4Range", field: "ip", min: 167772161, max: 167772169 });
  });

  it("reads comparisons with LogsQL's units: durations in µs, sizes in bytes", () => {
    expect(filterOf("latency:>1.5s")).toEqual({ kind: "range", field: "latency", min: 1_500_000, minInclusive: false, max: Infinity, maxInclusive: true });
    expect(filterOf("latency:<=250ms")).toMatchObject({ min: -Infinity, max: 250_000, maxInclusive: true });
    expect(filterOf("response_size:>=1MB")).toMatchObject({ min: 1_000_000, minInclusive: true });
    expect(filterOf("response_size:>64KiB")).toMatchObject({ min: 65_536 });
    expect(filterOf("status:>=500")).toMatchObject({ field: "status", min: 500, minInclusive: true });
    expect(filterOf("status:range[500, 600)")).toEqual({ kind: "range", field: "status", min: 500, minInclusive: true, max: 600, maxInclusive: false });
    expect(filterOf('user_agent:<"m"')).toEqual({ kind: "textRange", field: "user_agent", max: "m", maxInclusive: false, minInclusive: false });
  });

  it("reads _time in LogsQL's forms, in µs with both bounds inclusive", () => {
    const day = 86_400e6;
    const nov20 = Date.UTC(2026, 10, 20) * 1000;
    expect(filterOf("_time:1h")).toEqual({ kind: "time", min: now - 3600e6 + 1, max: now });
    expect(filterOf("_time:[2026-11-20, 2026-11-21)")).toEqual({ kind: "time", min: nov20, max: nov20 + day - 1 });
    expect(filterOf("_time:[2026-11-20, 2026-11-21]")).toEqual({ kind: "time", min: nov20, max: nov20 + 2 * day - 1 });
    expect(filterOf("_time:2026-11-20Z")).toEqual({ kind: "time", min: nov20, max: nov20 + day - 1 });
    expect(filterOf("_time:2026-11-20T10:00:00+02:00")).toEqual({ kind: "time", min: nov20 + 8 * 3600e6, max: nov20 + 8 * 3600e6 + 1e6 - 1 });
    expect(filterOf("_time:>2026-11-20")).toEqual({ kind: "time", min: nov20 + day, max: Infinity });
    expect(filterOf("_time:1h offset 1d")).toEqual({ kind: "time", min: now - day - 3600e6 + 1, max: now - day });
  });

  it("gives NOT the highest priority, then AND (or a space), then OR", () => {
    const w = (p: string): Filter => ({ kind: "phrase", field: "_msg", phrase: p, prefix: false, anyCase: false });
    expect(filterOf("error -buggy OR foo")).toEqual({
      kind: "or",
      filters: [{ kind: "and", filters: [w("error"), { kind: "not", filter: w("buggy") }] }, w("foo")],
    });
    expect(filterOf("error AND NOT (a OR b)")).toEqual({
      kind: "and",
      filters: [w("error"), { kind: "not", filter: { kind: "or", filters: [w("a"), w("b")] } }],
    });
    expect(filterOf("method:(GET OR HEAD)")).toEqual({
      kind: "or",
      filters: [
        { kind: "phrase", field: "method", phrase: "GET", prefix: false, anyCase: false },
        { kind: "phrase", field: "method", phrase: "HEAD", prefix: false, anyCase: false },
      ],
    });
    expect(filterOf("*")).toEqual({ kind: "all" });
    expect(filterOf("")).toEqual({ kind: "all" });
  });
});

describe("parseQuery: pipes", () => {
  it("reads stats by fields and time buckets, with named and unnamed results", () => {
    const q = parseQuery("status:>=500 | stats by (_time:1h, route) count() as n, quantile(0.99, latency) p99, avg(response_size)", now);
    expect(q.pipes).toEqual([
      {
        kind: "stats",
        by: [{ field: "_time", step: 3600e6 }, { field: "route" }],
        funcs: [
          { fn: "count", fields: [], name: "n" },
          { fn: "quantile", fields: ["latency"], phi: 0.99, name: "p99" },
          { fn: "avg", fields: ["response_size"], name: "avg(response_size)" },
        ],
      },
    ]);
    expect(q.columns).toEqual([
      { name: "_time", type: "time", group: true },
      { name: "route", type: "text", group: true },
      { name: "n", type: "int" },
      { name: "p99", type: "duration" },
      { name: "avg(response_size)", type: "float" },
    ]);
  });

  it("reads sort, limit, fields, top and filter pipes, each seeing the columns before it", () => {
    const q = parseQuery("* | stats by (ip) count() n | filter n:>10 | sort by (n desc, ip) limit 5 | fields ip", now);
    expect(q.pipes.slice(1)).toEqual([
      { kind: "filter", filter: { kind: "range", field: "n", min: 10, minInclusive: false, max: Infinity, maxInclusive: true } },
      { kind: "sort", by: [{ field: "n", desc: true }, { field: "ip", desc: false }], limit: 5 },
      { kind: "fields", fields: ["ip"] },
    ]);
    expect(q.columns).toEqual([{ name: "ip", type: "text", group: true }]);
    expect(parseQuery("* | top 3 by (user_agent)", now).columns).toEqual([
      { name: "user_agent", type: "text", group: true },
      { name: "hits", type: "int" },
    ]);
    expect(parseQuery("error | head", now).pipes).toEqual([{ kind: "limit", n: 10 }]);
    expect(parseQuery("* | sort by (latency) desc", now).pipes).toEqual([{ kind: "sort", by: [{ field: "latency", desc: true }] }]);
  });
});

describe("parseQuery: errors point at the line and column", () => {
  it("names an unknown field where it is, with the nearest known one", () => {
    expect(refusal("method:GET AND stauts:500")).toBe("line 1, column 16: unknown field 'stauts' (did you mean 'status'?)");
    expect(refusal("_time:1h\n| stats by (rout) count()")).toBe("line 2, column 13: unknown field 'rout' (did you mean 'route'?)");
    expect(refusal("* | stats count() n | sort by (latency)")).toMatch(/^line 1, column 32: unknown field 'latency'/);
  });

  it("refuses bad values, bad patterns and unclosed parts with where they are", () => {
    expect(refusal("latency:>fast")).toBe("line 1, column 10: 'fast' is not a duration (latency is in µs: 250ms, 1.5s, 2m, or a number of µs)");
    expect(refusal("status:>5xx")).toMatch(/^line 1, column 9: '5xx' is not a number/);
    expect(refusal('resource:~"(unclosed"')).toMatch(/^line 1, column 11: not a valid RE2 pattern: /);
    expect(refusal("(error OR warn")).toBe("line 1, column 15: expected ')', found the end of the query");
    expect(refusal('"zip/raw')).toBe('line 1, column 1: a string opened with " is not closed');
    expect(refusal("_time:[2026-11-20, someday)")).toMatch(/^line 1, column 20: 'someday' is not a time/);
    expect(refusal("* | stats sum(method)")).toBe("line 1, column 15: sum() adds up numbers: 'method' holds text");
    expect(refusal("* | frobnicate")).toMatch(/^line 1, column 5: unknown pipe 'frobnicate'/);
    expect(refusal("| stats count()")).toMatch(/^line 1, column 1: a query starts with a filter/);
    expect(refusal("quantile(2, latency)")).toBeDefined();
    expect(refusal("* | stats quantile(2, latency)")).toMatch(/^line 1, column 20: quantile\(φ, field\) takes φ from 0 to 1/);
  });
});

/**
 * Random forge traffic and random queries over it, for the property tests
 * of the query language (the pure pipeline against the reference evaluator,
 * and the store contract: every backend against it). Values come from small
 * vocabularies so that filters both match and miss; queries are text, so
 * the parser is part of every run.
 */
import { create } from "@bufbuild/protobuf";
import fc from "fast-check";
import { LogLineSchema, type RequestLog } from "../../gen/reqlog/v1/log_service_pb.js";
import { minimalLog, rid, t0 } from "./fixtures.js";

/** The first hour of the traffic (an hour boundary, µs). */
export const queryEpoch = (t0 / 3_600_000_000n) * 3_600_000_000n;
/** `now` for relative times: six hours after the epoch. */
export const queryNow = Number(queryEpoch) + 6 * 3_600e6;

const resources = [
  "/api/v1/admin/hooks",
  "/api/v1/admin/hooks/17",
  "/api/v1/repos/alice/app/actions/artifacts/48213/zip",
  "/api/v1/repos/alice/app/actions/artifacts/48213/zip/raw?expires=1&sig=x",
  "/api/v1/repos/bob/tools/commits?stat=false",
  "/api/v1/teams/7",
  "/api/v1/orgs/acme/rename",
  "/healthz",
];
const agents = ["curl/8.5.0", "Mozilla/5.0 (X11) Firefox/128.0", "forge-runner/2.1 (ci)", ""];
const ips = ["10.0.0.1", "10.0.3.7", "192.168.1.20", "2001:db8::1", "203.0.113.9"];
const lineTexts = ["cache miss", "timeout talking to db", "retry 2", "signed url expired"];

export interface TrafficRecord {
  log: RequestLog;
}

/** One request of random traffic: ids `q0`…`q39` (so rewrites happen), times over six hours. */
export const trafficRecord: fc.Arbitrary<RequestLog> = fc
  .record({
    id: fc.nat(39),
    version: fc.nat(2),
    module: fc.nat(3),
    finished: fc.nat(5).map((n) => n > 0),
    endUs: fc.nat(6 * 3_600_000_000 - 1),
    resource: fc.nat(resources.length - 1),
    method: fc.constantFrom("GET", "GET", "POST", "PUT", "DELETE", "HEAD"),
    status: fc.constantFrom(200, 200, 201, 204, 302, 404, 401, 500, 502, 503, 0, 700),
    latency: fc.oneof(fc.nat(5_000), fc.nat(3_000_000)),
    size: fc.oneof(fc.nat(2_000), fc.nat(5_000_000)),
    agent: fc.nat(agents.length - 1),
    ip: fc.nat(ips.length - 1),
    urlMapEntry: fc.oneof({ arbitrary: fc.constant(""), weight: 4 }, { arbitrary: fc.constant("/api/v1/special/{x}"), weight: 1 }),
    lines: fc.array(fc.record({ level: fc.nat(4), text: fc.nat(lineTexts.length - 1) }), { maxLength: 3 }),
    host: fc.constantFrom("", "forge.example.com"),
  })
  .map((r) => {
    const endTime = queryEpoch + BigInt(r.endUs);
    return minimalLog({
      requestId: rid(`q${r.id}`),
      versionId: `v${r.version}`,
      ...(r.module > 0 ? { moduleId: r.module === 1 ? "default" : "api" } : {}),
      finished: r.finished,
      startTime: endTime - BigInt(r.latency),
      endTime,
      latency: BigInt(r.latency),
      method: r.method,
      resource: resources[r.resource]!,
      httpVersion: "HTTP/1.1",
      status: r.status,
      responseSize: BigInt(r.size),
      userAgent: agents[r.agent]!,
      ip: ips[r.ip]!,
      urlMapEntry: r.urlMapEntry,
      ...(r.host ? { host: r.host } : {}),
      line: r.lines.map((l, i) => create(LogLineSchema, { time: endTime - BigInt(i + 1), level: l.level, logMessage: lineTexts[l.text]! })),
    });
  });

const q = (s: string) => JSON.stringify(s);

/** A filter over the traffic's fields, as query text. */
const atom: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom("zip", "raw", "curl", "hooks", '"zip/raw"', '"GET /api/v1/admin"', "500", "Firefox", "alice", "api*", "i(GET)"),
  // Words that occur only inside longer words: only the word boundaries tell them apart.
  fc.constantFrom("art", '"admin/hook"', "resource:commit", "user_agent:Fire", "line:time", "art*", "resource:hook*", "i(fire*)"),
  // Text in one piece of the line (the HTTP version, an ip), and text that may be in its time or fixed parts.
  fc.constantFrom('"HTTP/1.1"', '"1.1"', '"0.3"', '"+0000"', '"Nov/20"', '"-"'),
  fc.constantFrom("GET", "POST", "HEAD").map((m) => `method:${m}`),
  fc.constantFrom("artifacts", "/api/v1/admin", "17", "commits").map((w) => `resource:${q(w)}`),
  fc.constantFrom("/api/v1/admin/hooks/{id}", "/api/v1/special/{x}", "/healthz").map((r) => `route:=${q(r)}`),
  fc.constantFrom("status:500", "status:>=500", "status:<300", "status:in(200, 204, 404)", "status:range[400, 600)", "status_class:5"),
  fc.constantFrom("latency:>1s", "latency:<=2ms", "latency:>250ms", "response_size:>=1MB", "response_size:<1K"),
  fc.constantFrom('ip:ipv4_range("10.0.0.0/8")', "ip:10.0.3.7", 'ip:="2001:db8::1"', "ip:192.168.1.20"),
  fc.constantFrom("user_agent:curl", 'user_agent:=""', "user_agent:*", 'user_agent:~"(ci)"', 'user_agent:<"m"'),
  fc.constantFrom("version_id:v1", "version_id:in(v0, v2)", "module_id:api", "host:forge.example.com", 'host:""'),
  fc.constantFrom("line:timeout", 'line:"cache miss"', "level:>=3", "level:*", 'line:~"retry \\\\d"'),
  fc.constantFrom('resource:~"artifacts/\\\\d+/zip"', '_msg:~"^10\\\\."', 'resource:="/healthz"', 'resource:="/api/v1/repos"*'),
  fc.nat(5).map((h) => `_time:[${new Date(Number(queryEpoch) / 1000 + h * 3_600_000).toISOString()}, ${new Date(Number(queryEpoch) / 1000 + (h + 2) * 3_600_000).toISOString()})`),
  fc.constantFrom("_time:3h", "_time:>2h", "_time:90m"),
);

export const filterText: fc.Arbitrary<string> = fc.letrec<{ f: string }>((tie) => ({
  f: fc.oneof(
    { arbitrary: atom, weight: 5 },
    { arbitrary: tie("f").map((x) => `-${/^[(\w]/.test(x) ? x : `(${x})`}`), weight: 1 },
    { arbitrary: fc.tuple(tie("f"), tie("f")).map(([a, b]) => `(${a} ${b})`), weight: 1 },
    { arbitrary: fc.tuple(tie("f"), tie("f")).map(([a, b]) => `(${a} OR ${b})`), weight: 1 },
  ),
})).f;

const byFields = fc.subarray(["route", "status", "method", "status_class", "_time:1h", "ip", "version_id", "module_id", "level"], { maxLength: 2 });
const funcs = fc.subarray(
  ["count()", "sum(response_size)", "avg(latency)", "min(latency)", "max(status)", "quantile(0.9, latency)", "median(response_size)",
    "count_uniq(ip)", "count(referrer)", "max(resource)", "min(_time)"],
  { minLength: 1, maxLength: 3 },
);

/** Pipes whose answer is one well-defined list of rows (no ties a backend may order its own way). */
export const pipesText: fc.Arbitrary<string> = fc.oneof(
  fc.constant(""),
  fc.tuple(byFields, funcs).map(([by, fs]) => ` | stats${by.length ? ` by (${by.join(", ")})` : ""} ${fs.join(", ")}`),
  fc.tuple(byFields.filter((b) => b.length > 0), fc.integer({ min: 1, max: 4 })).map(
    ([by, n]) => ` | stats by (${by.join(", ")}) count() as n | sort by (n desc, ${by.map((b) => b.split(":")[0]).join(", ")}) | limit ${n}`,
  ),
  fc.tuple(fc.constantFrom("ip", "method", "route", "status"), fc.integer({ min: 1, max: 4 })).map(([f, n]) => ` | top ${n} by (${f})`),
  fc.integer({ min: 1, max: 6 }).map((n) => ` | sort by (latency desc, request_id) | limit ${n} | fields request_id, latency, status`),
  fc.constant(" | stats by (route) count() n, sum(response_size) bytes | filter n:>1"),
  fc.constant(" | stats by (_time:1h) count(), quantile(0.5, latency) p50"),
);

export const queryText: fc.Arbitrary<string> = fc.tuple(fc.oneof(fc.constant("*"), filterText), pipesText).map(([f, p]) => f + p);

import { create } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RequestLogSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { formatCombined } from "../../src/format/combined-line.js";
import { createAccessLogParser, type ParsedLine } from "../../src/ingest/access-log-parser.js";
import { createRouteTable, forgeRouteTable } from "../../src/routes/route-table.js";

const target = { appId: "forge", versionId: "v1", routes: forgeRouteTable };
const auto = createAccessLogParser({}, target);
const parse = (line: string, parser = auto): ParsedLine => parser.parse(line, () => "file:0");
const logOf = (line: string, parser = auto) => {
  const parsed = parse(line, parser);
  if (!("log" in parsed)) throw new Error(parsed.problem);
  return parsed.log;
};

describe("an access-log line as a request record", () => {
  it("takes ip of ip:port and [v6]:port, and the time in its zone", () => {
    const log = logOf('198.51.100.7:53122 - alice [18/Nov/2026:12:06:40 +0100] "PUT /api/v1/user/starred/a/b HTTP/2.0" 403 21 "-" "-"');
    expect([log.ip, log.nickname, log.method, log.resource, log.httpVersion, log.status, log.responseSize]).toEqual([
      "198.51.100.7", "alice", "PUT", "/api/v1/user/starred/a/b", "HTTP/2.0", 403, 21n,
    ]);
    expect(log.endTime).toBe(BigInt(Date.UTC(2026, 10, 18, 11, 6, 40)) * 1000n);
    expect(log.startTime).toBe(log.endTime);
    expect(log.urlMapEntry).toBe("/api/v1/user/starred/{owner}/{repo}");
    expect(new TextDecoder().decode(log.requestId)).toBe("file:0");
    // The line reqlog derives differs (no port, UTC): the original is kept.
    expect(log.combined).toBe('198.51.100.7:53122 - alice [18/Nov/2026:12:06:40 +0100] "PUT /api/v1/user/starred/a/b HTTP/2.0" 403 21 "-" "-"');
    expect(logOf('[2001:db8::1]:443 - - [18/Nov/2026:11:06:40 +0000] "GET / HTTP/1.1" 200 0 "-" "-"').ip).toBe("2001:db8::1");
    expect(logOf('2001:db8::1 - - [18/Nov/2026:11:06:40 +0000] "GET / HTTP/1.1" 200 0 "-" "-"').ip).toBe("2001:db8::1");
  });

  it("leaves combined empty (the server derives the same line) when the line is what reqlog would write", () => {
    const line = '203.0.113.9 - - [18/Nov/2026:11:06:40 +0000] "GET /api/v1/teams/7 HTTP/1.1" 200 12 "-" "git/2.43.0"';
    const log = logOf(line);
    expect(log.combined).toBe("");
    expect(formatCombined(log)).toBe(line);
  });

  it("reads escaped quotes as part of a value when the line can also be split at them", () => {
    // `"\" " "-"`: a referrer of `" ` (quote, space) and no user agent, not `\` and ` "-`.
    const log = logOf('0.0.0.0 - - [01/Jan/1970:00:00:00 +0000] "A /- HTTP/1.0" 100 0 "\\" " "-"');
    expect([log.referrer, log.userAgent, log.combined]).toEqual(['" ', "", ""]);
    // A writer that left a quote unescaped (the forge's user agent) is still read by the fields after it.
    const bare = logOf('1.2.3.4 - - [18/Nov/2026:11:06:40 +0000] "GET / HTTP/1.1" 200 1 "-" "a "quoted" agent"');
    expect(bare.userAgent).toBe('a "quoted" agent');
  });

  it("keeps a line that is no request (nginx's \"-\", a TLS handshake on a plain port) with method -", () => {
    const dash = logOf('203.0.113.9 - - [18/Nov/2026:11:06:40 +0000] "-" 400 0 "-" "-"');
    expect([dash.method, dash.resource, dash.httpVersion, dash.status]).toEqual(["-", "-", "", 400]);
    const tls = logOf('203.0.113.9 - - [18/Nov/2026:11:06:40 +0000] "\\x16\\x03\\x01\\x00\\xA5\\x01" 400 157 "-" "-"');
    expect([tls.method, tls.resource]).toEqual(["-", "\x16\x03\x01\x00\uFFFD\x01"]);
  });

  it("reads latency from $request_time, else the sum of $upstream_response_time, and times from $msec or $time_iso8601", () => {
    const timed = createAccessLogParser(
      { logFormat: '$msec "$request" $status $request_time $upstream_response_time $host $request_id' },
      { ...target, moduleId: "web" },
    );
    const log = logOf('1795000000.250 "GET /api/v1/admin/hooks/3 HTTP/1.1" 200 0.125 0.100, 0.020 forge.test 4f1c9d2e8b7a6c5d4e3f2a1b0c9d8e7f', timed);
    expect([log.endTime, log.latency, log.startTime]).toEqual([1_795_000_000_250_000n, 125_000n, 1_795_000_000_125_000n]);
    expect([log.host, log.moduleId, new TextDecoder().decode(log.requestId)]).toEqual(["forge.test", "web", "4f1c9d2e8b7a6c5d4e3f2a1b0c9d8e7f"]);
    expect(logOf('1795000000.250 "GET / HTTP/1.1" 200 - 0.004, 0.002 : 0.001 - -', timed).latency).toBe(7_000n);
    expect(new TextDecoder().decode(logOf('1795000000.250 "GET / HTTP/1.1" 200 - - - -', timed).requestId)).toBe("file:0");

    const iso = createAccessLogParser({ logFormat: "$time_iso8601 $request_method $request_uri $server_protocol $status $bytes_sent" }, target);
    const split = logOf("2026-11-18T12:06:40+01:00 POST /api/v1/admin/hooks?x=1 HTTP/1.1 201 650", iso);
    expect([split.endTime, split.method, split.resource, split.httpVersion, split.responseSize]).toEqual([
      BigInt(Date.UTC(2026, 10, 18, 11, 6, 40)) * 1000n, "POST", "/api/v1/admin/hooks?x=1", "HTTP/1.1", 650n,
    ]);
  });

  it("names what is wrong with a line that matches the format but cannot be a record", () => {
    const ids = createAccessLogParser({ logFormat: '[$time_local] "$request" $request_id' }, target);
    expect(parse(`[18/Nov/2026:11:06:40 +0000] "GET / HTTP/1.1" ${"x".repeat(300)}`, ids)).toEqual({ problem: "$request_id is 300 bytes long, over the maximum of 256" });
    const msec = createAccessLogParser({ logFormat: '$msec "$request"' }, target);
    expect("log" in parse('0.000 "GET / HTTP/1.1"', msec)).toBe(true);
    expect(parse('[32/Nov/2026:11:06:40 +0000] "GET / HTTP/1.1" x', ids)).toEqual({ problem: '$time_local "32/Nov/2026:11:06:40 +0000" is not a valid time' });
  });

  it("takes url_map_entry from the given route table, leaving it empty when no template matches", () => {
    const routes = createRouteTable(["/{owner}/{repo}/raw/{path*}"]);
    const parser = createAccessLogParser({}, { ...target, routes });
    expect(logOf('1.2.3.4 - - [18/Nov/2026:11:06:40 +0000] "GET /alice/app/raw/a/b.md HTTP/1.1" 200 1', parser).urlMapEntry).toBe("/{owner}/{repo}/raw/{path*}");
    expect(logOf('1.2.3.4 - - [18/Nov/2026:11:06:40 +0000] "GET /favicon.ico HTTP/1.1" 200 1', parser).urlMapEntry).toBe("");
  });
});

/** Text a field may hold: any characters (quotes, backslashes, control characters, non-ASCII), not a lone "-". */
const text = fc.string({ unit: "grapheme", maxLength: 30 }).filter((s) => s !== "-");
const token = fc.stringMatching(/^[A-Za-z0-9._~!$&'()*+,;=:@%/-]{1,20}$/);

describe("the combined line, property", () => {
  it("reading the combined line reqlog writes for any record gives that record back (and needs no stored combined)", () => {
    fc.assert(
      fc.property(
        fc.record({
          ip: fc.ipV4(),
          nickname: fc.option(fc.stringMatching(/^[A-Za-z0-9_.@-]{1,12}$/).filter((s) => s !== "-"), { nil: undefined }),
          seconds: fc.integer({ min: 0, max: 4_000_000_000 }),
          method: fc.stringMatching(/^[A-Z]{1,8}$/),
          resource: token.map((t) => `/${t}`),
          httpVersion: fc.constantFrom("HTTP/1.0", "HTTP/1.1", "HTTP/2.0"),
          status: fc.integer({ min: 100, max: 599 }),
          responseSize: fc.bigInt({ min: 0n, max: 1n << 40n }),
          referrer: fc.option(text, { nil: undefined }),
          userAgent: fc.option(text, { nil: undefined }),
        }),
        (fields) => {
          const time = BigInt(fields.seconds) * 1_000_000n;
          const original = create(RequestLogSchema, {
            ip: fields.ip,
            startTime: time,
            endTime: time,
            method: fields.method,
            resource: fields.resource,
            httpVersion: fields.httpVersion,
            status: fields.status,
            responseSize: fields.responseSize,
            ...(fields.nickname ? { nickname: fields.nickname } : {}),
            ...(fields.referrer ? { referrer: fields.referrer } : {}),
            ...(fields.userAgent ? { userAgent: fields.userAgent } : {}),
          });
          const line = formatCombined(original);
          const log = logOf(line);
          expect({
            ip: log.ip,
            nickname: log.nickname,
            time: [log.startTime, log.endTime],
            request: [log.method, log.resource, log.httpVersion],
            status: log.status,
            size: log.responseSize,
            referrer: log.referrer,
            userAgent: log.userAgent,
          }).toEqual({
            ip: fields.ip,
            nickname: fields.nickname ?? "",
            time: [time, time],
            request: [fields.method, fields.resource, fields.httpVersion],
            status: fields.status,
            size: fields.responseSize,
            referrer: fields.referrer ?? "",
            userAgent: fields.userAgent ?? "",
          });
          expect(log.combined).toBe("");
        },
      ),
      { numRuns: 500 },
    );
  });
});

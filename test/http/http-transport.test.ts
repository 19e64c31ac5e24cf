import { toJson } from "@bufbuild/protobuf";
import { type Client, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { describe, expect, it } from "vitest";
import { LogReadResponseSchema, LogService } from "../../gen/reqlog/v1/log_service_pb.js";
import { Code } from "../../src/reqlog-error.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { lenientService } from "../helpers/lenient-schema.js";
import { callError } from "../helpers/test-client.js";
import { readQueryAnswer } from "../../src/client/query-answer.js";
import { useTestServer } from "../helpers/test-server.js";

const ts = useTestServer({ http: true });

const baseUrl = () => `http://${ts.httpAddress}`;
const transports: Record<string, () => Transport> = {
  "Connect JSON (HTTP/1.1)": () => createConnectTransport({ baseUrl: baseUrl(), httpVersion: "1.1" }),
  "Connect binary (HTTP/1.1)": () => createConnectTransport({ baseUrl: baseUrl(), httpVersion: "1.1", useBinaryFormat: true }),
  "gRPC-Web (HTTP/1.1)": () => createGrpcWebTransport({ baseUrl: baseUrl(), httpVersion: "1.1" }),
  "Connect JSON (h2c)": () => createConnectTransport({ baseUrl: baseUrl(), httpVersion: "2" }),
  "gRPC (h2c)": () => createGrpcTransport({ baseUrl: baseUrl() }),
};

function client(transport: string): Client<typeof LogService> {
  // Requests encode leniently: the fixtures leave derivable required fields out, as writers may.
  return createClient(lenientService(LogService), transports[transport]!());
}

/** POSTs JSON as curl does; returns the HTTP status and the parsed body. */
async function postJson(method: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${baseUrl()}/reqlog.v1.LogService/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const ids = (logs: { requestId: Uint8Array }[]) => logs.map((l) => new TextDecoder().decode(l.requestId));

describe("the HTTP port", () => {
  it("answers a curl-style JSON Read exactly as the gRPC port answers it", async () => {
    await ts.write(minimalLog({ requestId: rid("a"), endTime: t0 + 1n }), minimalLog({ requestId: rid("b"), endTime: t0 + 2n }));
    const overGrpc = await ts.read({ count: 10n });
    const overHttp = await postJson("Read", { appId: "forge", count: "10" });
    expect(overHttp.status).toBe(200);
    expect(overHttp.body).toEqual(toJson(LogReadResponseSchema, overGrpc));
    expect((overHttp.body.log as unknown[]).length).toBe(2);
  });

  for (const transport of Object.keys(transports)) {
    it(`serves Write, Read with paging, and Usage over ${transport}`, async () => {
      const c = client(transport);
      const written = await c.write({ log: ["x", "y", "z"].map((id, i) => minimalLog({ requestId: rid(id), endTime: t0 + BigInt(i) })) });
      expect(written.records).toBe(3);
      const first = await c.read({ appId: "forge", count: 2n });
      expect(ids(first.log)).toEqual(["z", "y"]);
      const next = await c.read({ appId: "forge", count: 2n, offset: first.offset });
      expect(ids(next.log)).toEqual(["x"]);
      const usage = await c.usage({ appId: "forge" });
      expect(usage.summary!.count).toBe(3n);
    });

    it(`streams a Query's answer over ${transport} as the gRPC port does, and refuses a bad one where it points`, async () => {
      const logs = Array.from({ length: 1200 }, (_, i) => minimalLog({ requestId: rid(`q${i}`), endTime: t0 + BigInt(i), status: [200, 404, 500][i % 3]! }));
      await ts.write(...logs.slice(0, 600));
      await ts.write(...logs.slice(600));
      const c = client(transport);
      const query = "* | fields request_id, status";
      const overHttp = await readQueryAnswer(c.query({ appId: "forge", query }));
      expect(overHttp).toEqual(await readQueryAnswer(ts.client.query({ appId: "forge", query })));
      // More rows than one message carries: the stream's rows arrive whole and in order.
      expect(overHttp.rows).toHaveLength(1200);
      expect(overHttp.rows[0]).toEqual(["q1199", 500]);
      expect(overHttp.columns).toEqual([{ name: "request_id", type: "bytes" }, { name: "status", type: "int" }]);
      const bad = { appId: "forge", query: "status:>=500 | stats by (rout) count()" };
      const refused = { code: Code.INVALID_ARGUMENT, details: "line 1, column 26: unknown field 'rout' (did you mean 'route'?)" };
      expect(await callError(readQueryAnswer(c.query(bad)))).toMatchObject(refused);
      expect(await callError(readQueryAnswer(ts.client.query(bad)))).toMatchObject(refused);
    });

    it(`streams Tail over ${transport}: records written while it follows, once each and in order`, async () => {
      const c = client(transport);
      const controller = new AbortController();
      const seen: string[] = [];
      const following = (async () => {
        try {
          for await (const page of c.tail({ appId: "forge" }, { signal: controller.signal })) {
            seen.push(...ids(page.log));
            if (seen.length >= 3) controller.abort();
          }
        } catch (err) {
          if (!controller.signal.aborted) throw err;
        }
      })();
      // Connect sends a stream's headers with its first message: write until the tail sees one.
      let n = 0;
      while (seen.length === 0 && n < 200) {
        await ts.write(minimalLog({ requestId: rid(`t${n}`), endTime: t0 + BigInt(n) }));
        n++;
        await new Promise((r) => setTimeout(r, 20));
      }
      const first = Number(seen[0]!.slice(1));
      await ts.write(minimalLog({ requestId: rid(`t${n}`), endTime: t0 + BigInt(n) }), minimalLog({ requestId: rid(`t${n + 1}`), endTime: t0 + BigInt(n + 1) }));
      await following;
      expect(seen.slice(0, 3)).toEqual([first, first + 1, first + 2].map((i) => `t${i}`));
    });
  }

  it("refuses bad input with the same code, message and ErrorInfo as the gRPC port", async () => {
    const http = await postJson("Read", { appId: "forge", combinedLogRegex: "((" });
    expect(http.status).toBe(400);
    expect(http.body).toMatchObject({
      code: "invalid_argument",
      message: "combined_log_regex is not a valid RE2 pattern: missing ): ((",
      details: [{ type: "google.rpc.ErrorInfo", debug: { reason: "INVALID_REQUEST", domain: "reqlog" } }],
    });
    const grpc = await callError(ts.read({ combinedLogRegex: "((" }));
    expect(grpc).toEqual({ code: Code.INVALID_ARGUMENT, details: http.body.message, reason: "INVALID_REQUEST" });
    const missing = await postJson("Write", { log: [{ appId: "forge" }] });
    expect(missing.body.message).toBe(
      "required fields not set: log[0].version_id, log[0].request_id, log[0].start_time, log[0].method, log[0].resource",
    );
    expect(await ts.stored(rid("req-1"))).toEqual([]);
  });

  it("deletes over curl-style Connect JSON as over gRPC: a dry run counts, the delete erases, an app alone is refused", async () => {
    await ts.write(
      ...["203.0.113.9", "203.0.113.9", "198.51.100.1"].map((ip, i) => minimalLog({ requestId: rid(`d${i}`), ip, endTime: t0 + BigInt(i) })),
    );
    expect(await postJson("Delete", { appId: "forge", ip: ["203.0.113.0/24"], dryRun: true })).toEqual({ status: 200, body: { deleted: "2" } });
    expect(ids((await ts.read({ count: 10n })).log)).toEqual(["d2", "d1", "d0"]);
    expect(await postJson("Delete", { appId: "forge", ip: ["203.0.113.0/24"] })).toEqual({ status: 200, body: { deleted: "2" } });
    expect(ids((await ts.read({ count: 10n })).log)).toEqual(["d2"]);
    const refused = await postJson("Delete", { appId: "forge" });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({
      code: "invalid_argument",
      message:
        'Delete names only app_id "forge": give a filter (request_id, ip, start_time/end_time, combined_log_regex), or set all to erase every request of the app',
    });
  });

  it("asks for the same tokens: none is UNAUTHENTICATED, a read token cannot write, a write token can", async () => {
    const reader = await ts.backend.tokens.create({ name: "r", scopes: ["read:logs"] });
    const writer = await ts.backend.tokens.create({ name: "w", scopes: ["write:logs"] });
    const log = {
      log: [{ appId: "forge", versionId: "v1", requestId: Buffer.from("req-1").toString("base64"), startTime: String(t0), method: "GET", resource: "/" }],
    };
    expect(await postJson("Write", log)).toMatchObject({ status: 401, body: { code: "unauthenticated" } });
    expect(await postJson("Write", log, { authorization: `Bearer ${reader.token}` })).toMatchObject({
      status: 403,
      body: { code: "permission_denied" },
    });
    expect(await postJson("Write", log, { authorization: `Bearer ${writer.token}` })).toEqual({
      status: 200,
      body: { records: 1, lines: 0 },
    });
    const read = await postJson("Read", { appId: "forge" }, { authorization: `Bearer ${reader.token}` });
    expect((read.body.log as { requestId: string }[]).map((l) => l.requestId)).toEqual([Buffer.from("req-1").toString("base64")]);
  });

  it("serves /metrics as Prometheus text whose call counters move with calls on both ports", async () => {
    const metrics = async () => {
      const response = await fetch(`${baseUrl()}/metrics`);
      expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
      const text = await response.text();
      for (const line of text.split("\n")) {
        if (line === "" || line.startsWith("# HELP ") || line.startsWith("# TYPE ")) continue;
        // A sample: name, optional labels (a value is quoted and may hold braces, as a route's {owner} does;
        // \\, \" and \n are its escapes), then the value.
        expect(line).toMatch(
          /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\[\\"n])*",?)*\})? (-?[0-9.]+(e[+-]?[0-9]+)?|NaN|[+-]Inf)$/i,
        );
      }
      return text;
    };
    const count = (text: string, transport: string, code: string) => {
      const line = text
        .split("\n")
        .find((l) => l.startsWith("grpc_server_handled_total{") && l.includes('grpc_method="Read"') && l.includes(`transport="${transport}"`) && l.includes(`grpc_code="${code}"`));
      return line ? Number(line.split(" ").pop()) : 0;
    };
    await ts.write(minimalLog({ requestId: rid("m1"), endTime: t0 + 1n }), minimalLog({ requestId: rid("m2"), endTime: t0 + 2n }));
    const before = await metrics();
    await ts.read();
    await ts.read();
    await postJson("Read", { appId: "forge" });
    await postJson("Read", { appId: "forge", combinedLogRegex: "((" });
    const after = await metrics();
    expect(count(after, "grpc", "OK") - count(before, "grpc", "OK")).toBe(2);
    expect(count(after, "http", "OK") - count(before, "http", "OK")).toBe(1);
    expect(count(after, "http", "INVALID_ARGUMENT") - count(before, "http", "INVALID_ARGUMENT")).toBe(1);
    const scanned = (text: string) => Number(/^reqlog_read_rows_scanned_total (\d+)$/m.exec(text)![1]);
    expect(scanned(after) - scanned(before)).toBe(3 * 2); // three Reads answered, each scanned both records
    expect(after).toMatch(/^reqlog_tails_open 0$/m);
    expect(after).toMatch(/^reqlog_store_bytes [1-9][0-9]*$/m);
    expect(after).toMatch(/^process_cpu_user_seconds_total /m);
  });
});

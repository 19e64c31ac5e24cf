import { connect as connectHttp2 } from "node:http2";
import { connect as connectTcp, type Socket } from "node:net";
import { gzipSync } from "node:zlib";
import { describe, expect, it, vi } from "vitest";
import { Code } from "../../src/reqlog-error.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { failureOf, rawUnaryCall } from "../helpers/test-client.js";
import { type TestServer, useTestServer } from "../helpers/test-server.js";

const port = (ts: TestServer) => Number(ts.httpAddress!.slice(ts.httpAddress!.lastIndexOf(":") + 1));

/** A Connect or gRPC envelope: flags, a big-endian length, the message. */
function envelope(message: Uint8Array | string): Buffer {
  const body = Buffer.from(message);
  const head = Buffer.alloc(5);
  head.writeUInt32BE(body.length, 1);
  return Buffer.concat([head, body]);
}

/** Writes records whose Tail messages fill any socket's buffers (about 8 MB). */
async function writeLots(ts: TestServer) {
  for (let w = 0; w < 16; w++) {
    await ts.write(
      ...Array.from({ length: 500 }, (_, i) =>
        minimalLog({ requestId: rid(`lot-${w}-${i}`), endTime: t0 + BigInt(w * 500 + i), userAgent: "u".repeat(1000) }),
      ),
    );
  }
}

describe("the HTTP port's Tails", () => {
  const ts = useTestServer({ http: true, limits: { maxTails: 4 } });

  it("frees the slot of a Connect Tail over HTTP/1.1 whose client stops reading, then disconnects", async () => {
    const body = envelope(JSON.stringify({ appId: "forge" }));
    const socket: Socket = await new Promise((resolve) => {
      const s = connectTcp(port(ts), "127.0.0.1", () => resolve(s));
    });
    socket.on("error", () => {});
    socket.write(
      "POST /reqlog.v1.LogService/Tail HTTP/1.1\r\nHost: x\r\nContent-Type: application/connect+json\r\n" +
        `Connect-Protocol-Version: 1\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    socket.write(body);
    await vi.waitFor(() => expect(ts.server.stats().openTails).toBe(1));
    socket.pause(); // reads nothing more: the server's writes back up
    await writeLots(ts);
    socket.destroy();
    await vi.waitFor(() => expect(ts.server.stats().openTails).toBe(0), { timeout: 20_000 });
  });

  it("frees the slot of a gRPC Tail over h2c whose client stops reading, then disconnects", async () => {
    const session = connectHttp2(`http://${ts.httpAddress}`).on("error", () => {});
    const stream = session.request({ ":method": "POST", ":path": "/reqlog.v1.LogService/Tail", "content-type": "application/grpc", te: "trailers" });
    stream.on("error", () => {});
    // LogReadRequest { app_id: "forge" }.
    stream.end(envelope(Buffer.from([0x0a, 5, ...Buffer.from("forge")])));
    await vi.waitFor(() => expect(ts.server.stats().openTails).toBe(1));
    stream.pause();
    await writeLots(ts);
    session.destroy();
    await vi.waitFor(() => expect(ts.server.stats().openTails).toBe(0), { timeout: 20_000 });
  });
});

describe("the HTTP port's refusals", () => {
  const maxMessageBytes = 64 * 1024;
  const ts = useTestServer({ http: true, limits: { maxMessageBytes } });

  /** POSTs a body to a LogService method over Connect's unary protocol; the HTTP status and the error's JSON. */
  async function post(method: string, body: Uint8Array, headers: Record<string, string>) {
    const response = await fetch(`http://${ts.httpAddress}/reqlog.v1.LogService/${method}`, { method: "POST", headers, body });
    return { status: response.status, body: (await response.json()) as { code?: string; message?: string } };
  }

  /** grpc_server_handled_total of Read over the HTTP port with this code. */
  async function handled(code: string): Promise<number> {
    const text = await (await fetch(`http://${ts.httpAddress}/metrics`)).text();
    const line = text
      .split("\n")
      .find((l) => l.startsWith("grpc_server_handled_total{") && l.includes('grpc_method="Read"') && l.includes('transport="http"') && l.includes(`grpc_code="${code}"`));
    return line ? Number(line.split(" ").pop()) : 0;
  }

  // LogReadRequest's field 1 (app_id) says 5 bytes follow; one does.
  const truncated = new Uint8Array([0x0a, 5, 0x61]);

  it("answers protobuf that does not decode INVALID_ARGUMENT with the gRPC port's message, counted, after authentication", async () => {
    const overGrpc = failureOf(await rawUnaryCall(ts.server.address, "/reqlog.v1.LogService/Read", truncated).catch((err: unknown) => err));
    expect(overGrpc.code).toBe(Code.INVALID_ARGUMENT);
    expect(overGrpc.details).toMatch(/^cannot decode reqlog\.v1\.LogReadRequest: /);
    const before = await handled("INVALID_ARGUMENT");
    expect(await post("Read", truncated, { "content-type": "application/proto" })).toEqual({
      status: 400,
      body: expect.objectContaining({ code: "invalid_argument", message: overGrpc.details }),
    });
    expect(await handled("INVALID_ARGUMENT")).toBe(before + 1);
    // gRPC over h2c on the HTTP port answers as the gRPC port does.
    const overH2c = failureOf(await rawUnaryCall(ts.httpAddress!, "/reqlog.v1.LogService/Read", truncated).catch((err: unknown) => err));
    expect(overH2c).toMatchObject({ code: Code.INVALID_ARGUMENT, details: overGrpc.details });

    await ts.backend.tokens.create({ name: "r", scopes: ["read:logs"] });
    expect(await post("Read", truncated, { "content-type": "application/proto" })).toMatchObject({
      status: 401,
      body: { code: "unauthenticated" },
    });
  });

  it("answers a streamed Ingest message that does not decode INVALID_ARGUMENT with the gRPC port's message", async () => {
    const ingest = "/reqlog.v1.LogService/Ingest";
    const overGrpc = failureOf(await rawUnaryCall(ts.server.address, ingest, truncated).catch((err: unknown) => err));
    expect(overGrpc).toMatchObject({ code: Code.INVALID_ARGUMENT, details: expect.stringMatching(/^cannot decode reqlog\.v1\.IngestRequest: /) });
    const overH2c = failureOf(await rawUnaryCall(ts.httpAddress!, ingest, truncated).catch((err: unknown) => err));
    expect(overH2c).toMatchObject({ code: Code.INVALID_ARGUMENT, details: overGrpc.details });
  });

  it("refuses JSON whose bytes are not UTF-8, storing nothing", async () => {
    const json = Buffer.concat([
      Buffer.from(`{"log":[{"appId":"forge","versionId":"v`),
      Buffer.from([0xff, 0xfe]),
      Buffer.from(`","requestId":"${Buffer.from("bad-utf8").toString("base64")}","startTime":"${t0}","method":"GET","resource":"/"}]}`),
    ]);
    expect(await post("Write", json, { "content-type": "application/json" })).toEqual({
      status: 400,
      body: expect.objectContaining({ code: "invalid_argument", message: "cannot decode reqlog.v1.WriteRequest from JSON: the body is not UTF-8" }),
    });
    expect(await ts.stored(rid("bad-utf8"))).toEqual([]);
  });

  it("refuses a body over max-message-bytes naming the limit, before and after decompression, as the gRPC port does", async () => {
    const big = Buffer.from(JSON.stringify({ appId: "forge", combinedLogRegex: "a".repeat(maxMessageBytes) }));
    expect(await post("Read", big, { "content-type": "application/json" })).toEqual({
      status: 429,
      body: expect.objectContaining({
        code: "resource_exhausted",
        message: `request message is ${big.length} bytes, over the limit max-message-bytes=${maxMessageBytes}`,
      }),
    });
    // 16 MiB of JSON in a few KiB of gzip: decompression stops at twice the limit.
    const bomb = gzipSync(Buffer.from(JSON.stringify({ appId: "forge", combinedLogRegex: "a".repeat(16 * 1024 * 1024) })));
    expect(bomb.length).toBeLessThan(maxMessageBytes);
    expect(await post("Read", bomb, { "content-type": "application/json", "content-encoding": "gzip" })).toEqual({
      status: 429,
      body: expect.objectContaining({
        code: "resource_exhausted",
        message: `request message is more than ${2 * maxMessageBytes} bytes, over the limit max-message-bytes=${maxMessageBytes}`,
      }),
    });
  });

  it("asks for the token before it decompresses a body", async () => {
    const reader = await ts.backend.tokens.create({ name: "r", scopes: ["read:logs"] });
    const notGzip = Buffer.from("this is not gzip");
    const headers = { "content-type": "application/json", "content-encoding": "gzip" };
    expect(await post("Read", notGzip, headers)).toMatchObject({ status: 401, body: { code: "unauthenticated" } });
    expect(await post("Read", notGzip, { ...headers, authorization: `Bearer ${reader.token}` })).toEqual({
      status: 400,
      body: expect.objectContaining({ code: "invalid_argument", message: expect.stringMatching(/^cannot decompress the request \(gzip\): /) }),
    });
  });
});

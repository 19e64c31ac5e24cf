import { connect as connectHttp2, constants as http2Constants } from "node:http2";
import { connect as connectTcp, type Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { Code } from "../../src/reqlog-error.js";
import { minimalLog, rid } from "../helpers/fixtures.js";
import { useTestServer } from "../helpers/test-server.js";

/**
 * Both ports bound what a connection may take: silent or slow clients are
 * dropped, idle ones closed, streams per connection announced, a request
 * that trickles in cut off. Timeouts are short here; every wait is for an
 * event (a close, a reply), never for a measured time.
 */
const ts = useTestServer({
  http: true,
  connections: { maxConnections: 4, headerTimeoutMs: 300, idleTimeoutMs: 500, requestTimeoutMs: 500, maxStreamsPerConnection: 7 },
});

const ports = ["gRPC", "HTTP"] as const;
const addressOf = (port: (typeof ports)[number]) => (port === "gRPC" ? ts.server.address : ts.httpAddress!);

function open(address: string): Promise<Socket> {
  const port = Number(address.slice(address.lastIndexOf(":") + 1));
  return new Promise((resolve, reject) => {
    const socket = connectTcp(port, "127.0.0.1", () => resolve(socket));
    socket.once("error", reject);
  });
}

/** Resolves when the server closes the socket (whatever the socket was sent). */
const closed = (socket: Socket) =>
  new Promise<void>((resolve) => {
    socket.on("error", () => {});
    socket.once("close", () => resolve());
    socket.resume();
  });

const preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/** An empty SETTINGS frame: length 0, type 4, no flags, stream 0. */
const emptySettings = Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]);

describe("connections", () => {
  it.each(ports)("drops a connection that sends nothing within --header-timeout (%s port)", async (port) => {
    const address = addressOf(port);
    await closed(await open(address));
  });

  it.each(ports)("closes an HTTP/2 connection that sends its preface and nothing more, once idle (%s port)", async (port) => {
    const address = addressOf(port);
    const socket = await open(address);
    socket.write(preface);
    socket.write(emptySettings);
    await closed(socket);
  });

  it("drops an HTTP/1.1 request whose headers trickle in (HTTP port)", async () => {
    const socket = await open(ts.httpAddress!);
    const ended = closed(socket);
    socket.write("GET /metrics HTTP/1.1\r\n");
    const drip = setInterval(() => socket.writable && socket.write("X-Slow: 1\r\n"), 50);
    await ended;
    clearInterval(drip);
  });

  it.each(ports)("announces its bound on streams per connection in its HTTP/2 settings (%s port)", async (port) => {
    const address = addressOf(port);
    const session = connectHttp2(`http://${address}`).on("error", () => {});
    try {
      const settings = await new Promise<{ maxConcurrentStreams?: number }>((resolve) => session.once("remoteSettings", resolve));
      expect(settings.maxConcurrentStreams).toBe(7);
    } finally {
      session.destroy();
    }
  });

  it("answers DEADLINE_EXCEEDED naming --request-timeout to a gRPC call whose body trickles in (gRPC port)", async () => {
    const session = connectHttp2(`http://${ts.server.address}`).on("error", () => {});
    try {
      const stream = session.request({
        ":method": "POST",
        ":path": "/reqlog.v1.LogService/Read",
        "content-type": "application/grpc",
        te: "trailers",
      });
      // A message of 100 bytes announced, 3 sent, and no end.
      stream.write(Buffer.from([0, 0, 0, 0, 100, 0x0a, 0x01, 0x61]));
      // A status before any reply is sent "trailers-only": in the response headers.
      const trailers = await new Promise<Record<string, unknown>>((resolve) => {
        stream.once("response", (headers) => "grpc-status" in headers && resolve(headers));
        stream.once("trailers", resolve);
      });
      expect(Number(trailers["grpc-status"])).toBe(Code.DEADLINE_EXCEEDED);
      expect(decodeURIComponent(String(trailers["grpc-message"]))).toBe("the request did not arrive whole within --request-timeout (500 ms)");
    } finally {
      session.destroy();
    }
  });

  it("cancels a Connect call whose body trickles in over HTTP/2 (HTTP port)", async () => {
    const session = connectHttp2(`http://${ts.httpAddress}`).on("error", () => {});
    try {
      const stream = session.request({ ":method": "POST", ":path": "/reqlog.v1.LogService/Read", "content-type": "application/json" });
      stream.write('{"appId":');
      const code = await new Promise<number>((resolve) => stream.once("close", () => resolve(stream.rstCode)));
      expect(code).toBe(http2Constants.NGHTTP2_CANCEL);
    } finally {
      session.destroy();
    }
  });

  it("answers 408 to an HTTP/1.1 request whose body trickles in (HTTP port)", async () => {
    const socket = await open(ts.httpAddress!);
    const reply: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => reply.push(chunk));
    const ended = closed(socket);
    socket.write("POST /reqlog.v1.LogService/Read HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{");
    await ended;
    expect(Buffer.concat(reply).toString("latin1")).toMatch(/^HTTP\/1\.1 408 /);
  });

  it("holds at most --max-connections on a port, and serves again once silent ones are dropped", async () => {
    const silent = await Promise.all(Array.from({ length: 4 }, () => open(ts.server.address)));
    const gone = silent.map(closed);
    // The fifth is closed as it arrives (the four are still within their header timeout).
    await closed(await open(ts.server.address));
    await Promise.all(gone);
    expect(await ts.write(minimalLog({ requestId: rid("after") }))).toMatchObject({ records: 1 });
  });
});

import { createServer, type Socket } from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createReqlogClient, log, type ReqlogClient } from "reqlog/client";
import { afterEach, describe, expect, it } from "vitest";
import { UserAppLogGroupSchema, UserAppLogLineSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { idOf, readAll } from "../helpers/read-all.js";
import { useTestServer } from "../helpers/test-server.js";

const ts = useTestServer();
const clients: ReqlogClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close({ timeoutMs: 200 }).catch(() => {});
});
const open = (options: Partial<Parameters<typeof createReqlogClient>[0]> = {}) => {
  const c = createReqlogClient({ server: ts.server.address, app: "forge", module: "api", version: "v7", instance: "web-1", ...options });
  clients.push(c);
  return c;
};
const failure = (call: Promise<unknown>) => call.then(() => expect.fail("the call succeeded"), (err: unknown) => ConnectError.from(err));

describe("createReqlogClient's RPCs", () => {
  it("sends the app, module, version and instance as call metadata, so SetStatus and Flush need only their request", async () => {
    const reqlog = open();
    await reqlog.rpc.setStatus({ status: "serving" });
    const logs = toBinary(
      UserAppLogGroupSchema,
      create(UserAppLogGroupSchema, { logLine: [create(UserAppLogLineSchema, { timestampUsec: 1_795_000_000_000_000n, level: 2n, message: "flushed" })] }),
    );
    await reqlog.rpc.flush({ logs }, { headers: { "reqlog-request-id": "f1" } });
    const { status } = await reqlog.rpc.listStatus({ appId: "forge" });
    expect(status.map((s) => [s.moduleId, s.versionId, s.instanceId, s.status])).toEqual([["api", "v7", "web-1", "serving"]]);
    const [flushed] = await readAll(reqlog.rpc, "forge");
    expect([idOf(flushed!), flushed!.moduleId, flushed!.versionId, flushed!.line[0]?.logMessage]).toEqual(["f1", "api", "v7", "flushed"]);
  });

  it("writes the client's identity into records, with the instance as clone_key", async () => {
    const reqlog = open();
    reqlog.send({ requestId: "w1", startTime: 1_795_000_000_000_000n, endTime: 1_795_000_000_250_000n, method: "GET", resource: "/api/v1/teams/1", status: 200 });
    await reqlog.flush({ timeoutMs: 5000 });
    const [stored] = await readAll(reqlog.rpc, "forge");
    expect([stored!.appId, stored!.moduleId, stored!.versionId, new TextDecoder().decode(stored!.cloneKey), stored!.latency]).toEqual([
      "forge", "api", "v7", "web-1", 250_000n,
    ]);
  });

  it("gives unary calls the default deadline, and a call its own", async () => {
    // A server that accepts connections and never answers.
    const sockets: Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const { port } = silent.address() as { port: number };
    try {
      const reqlog = open({ server: `127.0.0.1:${port}`, timeoutMs: 150 });
      expect((await failure(reqlog.rpc.usage({ appId: "forge" }))).code).toBe(Code.DeadlineExceeded);
      expect((await failure(reqlog.rpc.read({ appId: "forge" }, { timeoutMs: 50 }))).code).toBe(Code.DeadlineExceeded);
    } finally {
      for (const s of sockets) s.destroy();
      silent.close();
    }
  });

  it("cancels a call through its signal, and leaves streams without the unary deadline", async () => {
    const reqlog = open({ timeoutMs: 100 });
    const abort = new AbortController();
    const tail = reqlog.rpc.tail({ appId: "forge" }, { signal: abort.signal });
    const ended = (async () => {
      try {
        for await (const _ of tail);
        return "ended";
      } catch (err) {
        return ConnectError.from(err).code;
      }
    })();
    // Past the unary deadline, the Tail is still open.
    await new Promise((resolve) => setTimeout(resolve, 300));
    abort.abort();
    expect(await ended).toBe(Code.Canceled);
  });
});

describe("log outside a request", () => {
  it("goes to the process request of the client opened last", async () => {
    const reqlog = open();
    log.info("listening on %d", 3000);
    log.error(new Error("config file missing"));
    log.warning("%s", { toString: () => { throw new Error("no text for you"); } });
    await reqlog.flush({ timeoutMs: 5000 });
    const [process] = await readAll(reqlog.rpc, "forge");
    expect(idOf(process!)).toBe(reqlog.processRequestId);
    expect(process!.finished).toBe(false);
    expect(process!.line.map((l) => l.level)).toEqual([1, 3, 2]);
    expect(process!.line[2]!.logMessage).toBe("(log arguments that cannot be formatted: no text for you)");
    expect(process!.line[0]!.logMessage).toBe("listening on 3000");
    expect(process!.line[1]!.logMessage).toMatch(/^Error: config file missing\n    at /);
  });

  it("starts another process request after 10,000 lines, so none passes what the server lets one request hold", async () => {
    const reqlog = open();
    const first = reqlog.processRequestId;
    for (let i = 0; i < 10_000; i++) log.info("line %d", i);
    await reqlog.flush({ timeoutMs: 10_000 });
    log.info("one more");
    await reqlog.flush({ timeoutMs: 5000 });
    expect(reqlog.processRequestId).not.toBe(first);
    const requests = await readAll(reqlog.rpc, "forge");
    const lines = new Map(requests.map((r) => [idOf(r), r.line.length]));
    expect(lines).toEqual(new Map([[first, 10_000], [reqlog.processRequestId, 1]]));
  });

  it("is dropped and counted while no client is open", async () => {
    const reqlog = open();
    await reqlog.close();
    const before = log.droppedOutsideRequest;
    log.warning("nobody listens");
    expect(log.droppedOutsideRequest).toBe(before + 1);
  });
});

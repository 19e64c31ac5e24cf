import { create, toBinary } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RetryInfoSchema } from "../../gen/google/rpc/status_pb.js";
import { UserAppLogGroupSchema, UserAppLogLineSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { Code } from "../../src/reqlog-error.js";
import { readQueryAnswer } from "../../src/client/query-answer.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { bearer, callError, failureOf, type TestClient } from "../helpers/test-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

// One server for the whole matrix: its calls only add records and statuses.
let ts: TestServer;
const token: Record<string, string> = {};
beforeAll(async () => {
  ts = await startTestServer({ limits: { rateLimit: 1_000_000 } });
  const { tokens } = ts.backend;
  token.read = (await tokens.create({ name: "r", scopes: ["read:logs"] })).token;
  token.write = (await tokens.create({ name: "w", scopes: ["write:logs"] })).token;
  token.admin = (await tokens.create({ name: "a", scopes: ["admin"] })).token;
  token.otherApp = (await tokens.create({ name: "o", scopes: ["admin"], apps: ["other"] })).token;
  const revoked = await tokens.create({ name: "x", scopes: ["admin"] });
  token.revoked = revoked.token;
  expect(await tokens.revoke(revoked.info.id)).toBe(true);
});
afterAll(async () => {
  await ts.close();
});

const logs = toBinary(UserAppLogGroupSchema, create(UserAppLogGroupSchema, {
  logLine: [create(UserAppLogLineSchema, { timestampUsec: t0, level: 1n, message: "m" })],
}));
const context = { "reqlog-app-id": "forge", "reqlog-version-id": "v1", "reqlog-request-id": "req-1", "reqlog-instance-id": "i1" };

type CallHeaders = Record<string, string>;
type Call = (headers: CallHeaders) => Promise<unknown>;

/** Tail counts as answered once its headers arrive (the tail is in place), refused if it fails first. */
async function tail(headers: CallHeaders): Promise<void> {
  const abort = new AbortController();
  const replies = ts.client.tail({ appId: "forge" }, { headers, signal: abort.signal, onHeader: () => abort.abort() });
  try {
    for await (const _ of replies) break;
  } catch (err) {
    if (!(abort.signal.aborted && failureOf(err).code === Code.CANCELLED)) throw err;
  }
}

/**
 * Alerts counts as answered once it passes the token checks: this server has
 * no Alertmanager, so an allowed call ends at the handler's UNIMPLEMENTED.
 */
async function alerts(headers: CallHeaders): Promise<void> {
  try {
    await ts.client.alerts({ appId: "forge" }, { headers });
  } catch (err) {
    if (failureOf(err).code !== Code.UNIMPLEMENTED) throw err;
    expect(failureOf(err).details).toBe("this server shows no alerts: it was started without --alertmanager-url");
    return;
  }
  throw new Error("Alerts answered on a server without --alertmanager-url");
}

/** Ingest counts as answered once its one batch is acknowledged. */
async function ingest(headers: CallHeaders): Promise<void> {
  async function* batches() {
    yield { batchId: 1n, log: [minimalLog({ requestId: rid("ingested") })] };
  }
  const acks: bigint[] = [];
  for await (const ack of ts.client.ingest(batches(), { headers })) acks.push(ack.batchId);
  expect(acks).toEqual([1n]);
}

type Access = "read" | "write" | "admin";

const rpcs: Record<string, { access: Access; call: Call }> = {
  Write: { access: "write", call: (headers) => ts.client.write({ log: [minimalLog()] }, { headers }) },
  Flush: { access: "write", call: (headers) => ts.client.flush({ logs }, { headers: { ...context, ...headers } }) },
  SetStatus: { access: "write", call: (headers) => ts.client.setStatus({ status: "up" }, { headers: { ...context, ...headers } }) },
  Ingest: { access: "write", call: ingest },
  Read: { access: "read", call: (headers) => ts.client.read({ appId: "forge" }, { headers }) },
  Usage: { access: "read", call: (headers) => ts.client.usage({ appId: "forge" }, { headers }) },
  ListStatus: { access: "read", call: (headers) => ts.client.listStatus({ appId: "forge" }, { headers }) },
  Stats: { access: "read", call: (headers) => ts.client.stats({ appId: "forge" }, { headers }) },
  Tail: { access: "read", call: tail },
  Query: { access: "read", call: (headers) => readQueryAnswer(ts.client.query({ appId: "forge", query: "* | stats count()" }, { headers })) },
  Alerts: { access: "read", call: alerts },
  // A request that was never written: an allowed Delete erases nothing, so the matrix's other calls are unchanged.
  Delete: { access: "admin", call: (headers) => ts.client.delete({ appId: "forge", requestId: [rid("never-written")] }, { headers }) },
};

const as = (name: string): CallHeaders => bearer(token[name]!).headers;

type Outcome = "ok" | [number, string];
// Made at call time: the tokens exist only once beforeAll has run.
const callers: Record<string, (access: Access) => [CallHeaders, Outcome]> = {
  "no token": () => [{}, [Code.UNAUTHENTICATED, "missing access token: send call metadata authorization: Bearer <token>"]],
  "a malformed header": () => [{ authorization: "Token abc" }, [Code.UNAUTHENTICATED, "authorization metadata must be one 'Bearer <token>'"]],
  "an unknown token": () => [bearer("rql_0123456789abcdef_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA").headers, [Code.UNAUTHENTICATED, "invalid or revoked access token"]],
  "a revoked token": () => [as("revoked"), [Code.UNAUTHENTICATED, "invalid or revoked access token"]],
  "a read token": (access) => [as("read"), access === "read" ? "ok" : [Code.PERMISSION_DENIED, `this token lacks the ${access === "admin" ? "admin" : "write:logs"} scope`]],
  "a write token": (access) => [as("write"), access === "write" ? "ok" : [Code.PERMISSION_DENIED, `this token lacks the ${access === "admin" ? "admin" : "read:logs"} scope`]],
  "an admin token": () => [as("admin"), "ok"],
  "another app's admin token": () => [as("otherApp"), [Code.PERMISSION_DENIED, 'this token is not allowed app "forge"']],
};

describe("access control", () => {
  const cases = Object.keys(rpcs).flatMap((rpc) => Object.keys(callers).map((who) => [rpc, who] as const));
  it.each(cases)("%s with %s", async (rpc, who) => {
    const r = rpcs[rpc]!;
    const [headers, outcome] = callers[who]!(r.access);
    if (outcome === "ok") {
      await expect(r.call(headers)).resolves.not.toThrow();
    } else {
      const err = await callError(r.call(headers));
      expect(err).toEqual({ code: outcome[0], details: outcome[1], reason: "INVALID_REQUEST" });
    }
  });

  it("takes the app of a Flush from a token limited to one app", async () => {
    const forgeOnly = (await ts.backend.tokens.create({ name: "f", scopes: ["write:logs"], apps: ["forge"] })).token;
    const { "reqlog-app-id": _app, ...noApp } = context;
    await ts.client.flush({ logs }, { headers: { ...noApp, request: "x", ...bearer(forgeOnly).headers, "reqlog-request-id": "from-token" } });
    expect(await ts.stored(rid("from-token"))).toHaveLength(1);
  });

  it("keeps an app-limited token's offsets from reaching another app", async () => {
    const page = await ts.client.read({ appId: "forge", count: 1n }, bearer(token.admin!));
    const offset = page.log[0]!.offset!;
    const err = await callError(ts.client.read({ appId: "other", count: 1n, offset }, bearer(token.otherApp!)));
    expect(err.details).toBe("offset is not valid for this app (altered, or from another app or database)");
  });
});

describe("rate limit", () => {
  it("refuses calls over the token's rate with RESOURCE_EXHAUSTED and a retry delay", async () => {
    let clock = 0;
    const limited = await startTestServer({ limits: { rateLimit: 2 }, monotonicNow: () => clock });
    try {
      const client: TestClient = limited.connect({ token: (await limited.backend.tokens.create({ name: "r", scopes: ["read:logs"] })).token });
      const read = () => client.read({ appId: "forge" });
      await read();
      await read();
      const refused = await read().then(
        () => undefined,
        (err: unknown) => ConnectError.from(err),
      );
      expect(refused?.code).toBe(Code.RESOURCE_EXHAUSTED);
      expect(refused?.rawMessage).toBe("rate limit of 2 calls/s for this token exceeded: retry in 500 ms (limit rate-limit=2)");
      expect(refused?.findDetails(RetryInfoSchema)[0]?.retryDelay?.nanos).toBe(500_000_000);
      clock += 500;
      await read();
    } finally {
      await limited.close();
    }
  });
});

import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { type ClientReadableStream, Metadata, type ServiceError, status } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RetryInfoSchema, StatusSchema } from "../../gen/google/rpc/status_pb.js";
import {
  FlushRequestSchema,
  ListStatusRequestSchema,
  LogReadRequestSchema,
  type LogReadResponse,
  LogUsageRequestSchema,
  SetStatusRequestSchema,
  UserAppLogGroupSchema,
  UserAppLogLineSchema,
  WriteRequestSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { minimalLog, t0 } from "../helpers/fixtures.js";
import { callError, unaryCall } from "../helpers/test-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let ts: TestServer;
const token: Record<string, string> = {};
beforeAll(async () => {
  ts = await startTestServer({ limits: { rateLimit: 1_000_000 } });
  token.read = ts.tokens.create({ name: "r", scopes: ["read:logs"] }).token;
  token.write = ts.tokens.create({ name: "w", scopes: ["write:logs"] }).token;
  token.admin = ts.tokens.create({ name: "a", scopes: ["admin"] }).token;
  token.otherApp = ts.tokens.create({ name: "o", scopes: ["admin"], apps: ["other"] }).token;
  token.revoked = ts.tokens.create({ name: "x", scopes: ["admin"] }).token;
  ts.tokens.revoke(ts.tokens.list().find((t) => t.name === "x")!.id);
});
afterAll(async () => {
  await ts.close();
});

const logs = toBinary(UserAppLogGroupSchema, create(UserAppLogGroupSchema, {
  logLine: [create(UserAppLogLineSchema, { timestampUsec: t0, level: 1n, message: "m" })],
}));
const context = { "reqlog-app-id": "forge", "reqlog-version-id": "v1", "reqlog-request-id": "req-1", "reqlog-instance-id": "i1" };

type Call = (md: Record<string, string>) => Promise<unknown>;

/** Tail counts as answered once its headers arrive, refused if it errors first. */
function tail(md: Record<string, string>): Promise<void> {
  const m = new Metadata();
  for (const [k, v] of Object.entries(md)) m.set(k, v);
  const stream = (ts.client.tail as (r: unknown, m: Metadata) => ClientReadableStream<unknown>)(create(LogReadRequestSchema, { appId: "forge" }), m);
  return new Promise((resolve, reject) => {
    stream.once("metadata", () => {
      stream.cancel();
      resolve();
    });
    stream.once("error", (e: ServiceError) => (e.code === status.CANCELLED ? resolve() : reject(e)));
  });
}

const rpcs: Record<string, { access: "read" | "write"; call: Call }> = {
  Write: { access: "write", call: (md) => unaryCall(ts.client, "write", create(WriteRequestSchema, { log: [minimalLog()] }), md) },
  Flush: { access: "write", call: (md) => unaryCall(ts.client, "flush", create(FlushRequestSchema, { logs }), { ...context, ...md }) },
  SetStatus: { access: "write", call: (md) => unaryCall(ts.client, "setStatus", create(SetStatusRequestSchema, { status: "up" }), { ...context, ...md }) },
  Read: { access: "read", call: (md) => unaryCall(ts.client, "read", create(LogReadRequestSchema, { appId: "forge" }), md) },
  Usage: { access: "read", call: (md) => unaryCall(ts.client, "usage", create(LogUsageRequestSchema, { appId: "forge" }), md) },
  ListStatus: { access: "read", call: (md) => unaryCall(ts.client, "listStatus", create(ListStatusRequestSchema, { appId: "forge" }), md) },
  Tail: { access: "read", call: tail },
};

const bearer = (name: string) => ({ authorization: `Bearer ${token[name]}` });

type Outcome = "ok" | [number, string];
// Made at call time: the tokens exist only once beforeAll has run.
const callers: Record<string, (access: "read" | "write") => [Record<string, string>, Outcome]> = {
  "no token": () => [{}, [status.UNAUTHENTICATED, "missing access token: send call metadata authorization: Bearer <token>"]],
  "a malformed header": () => [{ authorization: "Token abc" }, [status.UNAUTHENTICATED, "authorization metadata must be one 'Bearer <token>'"]],
  "an unknown token": () => [{ authorization: "Bearer rql_0123456789abcdef_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" }, [status.UNAUTHENTICATED, "invalid or revoked access token"]],
  "a revoked token": () => [bearer("revoked"), [status.UNAUTHENTICATED, "invalid or revoked access token"]],
  "a read token": (access) => [bearer("read"), access === "read" ? "ok" : [status.PERMISSION_DENIED, "this token lacks the write:logs scope"]],
  "a write token": (access) => [bearer("write"), access === "write" ? "ok" : [status.PERMISSION_DENIED, "this token lacks the read:logs scope"]],
  "an admin token": () => [bearer("admin"), "ok"],
  "another app's admin token": () => [bearer("otherApp"), [status.PERMISSION_DENIED, 'this token is not allowed app "forge"']],
};

describe("access control", () => {
  const cases = Object.keys(rpcs).flatMap((rpc) => Object.keys(callers).map((who) => [rpc, who] as const));
  it.each(cases)("%s with %s", async (rpc, who) => {
    const r = rpcs[rpc]!;
    const [md, outcome] = callers[who]!(r.access);
    if (outcome === "ok") {
      await expect(r.call(md)).resolves.not.toThrow();
    } else {
      const err = await callError(r.call(md));
      expect(err).toEqual({ code: outcome[0], details: outcome[1], reason: "INVALID_REQUEST" });
    }
  });

  it("takes the app of a Flush from a token limited to one app", async () => {
    const forgeOnly = ts.tokens.create({ name: "f", scopes: ["write:logs"], apps: ["forge"] }).token;
    const { "reqlog-app-id": _app, ...noApp } = context;
    await unaryCall(ts.client, "flush", create(FlushRequestSchema, { logs }), { ...noApp, request: "x", authorization: `Bearer ${forgeOnly}`, "reqlog-request-id": "from-token" });
    expect(ts.store.getRequests("forge", [new TextEncoder().encode("from-token")])).toHaveLength(1);
  });

  it("keeps an app-limited token's offsets from reaching another app", async () => {
    const page = await unaryCall<LogReadResponse>(ts.client, "read", create(LogReadRequestSchema, { appId: "forge", count: 1n }), bearer("admin"));
    const offset = page.log[0]!.offset!;
    const err = await callError(unaryCall(ts.client, "read", create(LogReadRequestSchema, { appId: "other", count: 1n, offset }), bearer("otherApp")));
    expect(err.details).toBe("offset is not valid for this app (altered, or from another app or database)");
  });
});

describe("rate limit", () => {
  it("refuses calls over the token's rate with RESOURCE_EXHAUSTED and a retry delay", async () => {
    let clock = 0;
    const limited = await startTestServer({ limits: { rateLimit: 2 }, monotonicNow: () => clock });
    try {
      const t = limited.tokens.create({ name: "r", scopes: ["read:logs"] }).token;
      const read = () => unaryCall(limited.client, "read", create(LogReadRequestSchema, { appId: "forge" }), { authorization: `Bearer ${t}` });
      await read();
      await read();
      let refused: ServiceError | undefined;
      await read().catch((e: ServiceError) => (refused = e));
      expect(refused?.code).toBe(status.RESOURCE_EXHAUSTED);
      expect(refused?.details).toBe("rate limit of 2 calls/s for this token exceeded: retry in 500 ms (limit rate-limit=2)");
      const details = fromBinary(StatusSchema, refused!.metadata.get("grpc-status-details-bin")[0] as Buffer);
      const retry = details.details.map((d) => anyUnpack(d, RetryInfoSchema)).find((x) => x !== undefined);
      expect(retry?.retryDelay?.nanos).toBe(500_000_000);
      clock += 500;
      await read();
    } finally {
      await limited.close();
    }
  });
});

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, request as httpRequest, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import express from "express";
import Fastify, { type FastifyInstance } from "fastify";
import {
  createReqlogClient,
  forgeRouteTable,
  log,
  type ReqlogClient,
  reqlogFastify,
  requestLogger,
  type RequestLoggerMiddleware,
  type RequestLoggerOptions,
} from "reqlog/client";
import { afterEach, describe, expect, it } from "vitest";
import type { RequestLog } from "../../gen/reqlog/v1/log_service_pb.js";
import { freePort } from "../helpers/local-process.js";
import { idOf, readAll } from "../helpers/read-all.js";
import { useTestServer } from "../helpers/test-server.js";

const ts = useTestServer();
const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => {});
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A promise and the function that settles it (what Promise.withResolvers gives on Node 22). */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

function reqlogClient(options: Partial<Parameters<typeof createReqlogClient>[0]> = {}): ReqlogClient {
  const client = createReqlogClient({ server: ts.server.address, app: "forge", version: "v1", flushIntervalMs: 10, ...options });
  closers.push(() => client.close({ timeoutMs: 200 }));
  return client;
}

/** A node:http server with the middleware in front of `handle`; resolves with its base URL. */
async function nodeServer(
  mw: RequestLoggerMiddleware,
  handle: (req: IncomingMessage, res: ServerResponse) => unknown,
): Promise<string> {
  const server: Server = createServer((req, res) => mw(req, res, () => void handle(req, res)));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** What the service stored, once the client has sent everything, newest first. */
async function stored(client: ReqlogClient): Promise<RequestLog[]> {
  await client.flush({ timeoutMs: 5000 });
  return readAll(ts.client, "forge");
}

const byResource = (logs: RequestLog[], resource: string) => {
  const found = logs.find((l) => l.resource === resource);
  if (!found) throw new Error(`no record of ${resource} among ${logs.map((l) => l.resource).join(", ")}`);
  return found;
};

const lines = (l: RequestLog) => l.line.map((line) => `${line.level} ${line.logMessage}`);

describe("requestLogger in front of a node:http handler", () => {
  it("records the request's fields, its route template and the app lines written while serving it", async () => {
    const client = reqlogClient();
    const mw = requestLogger(client, { routes: forgeRouteTable });
    const base = await nodeServer(mw, async (req, res) => {
      log.info("creating a hook from %s", req.headers["user-agent"]);
      await sleep(20);
      log.warning("after an await");
      res.writeHead(201, { "content-type": "text/plain" });
      res.write("abc");
      res.end("de");
    });
    const before = BigInt(Date.now()) * 1000n;
    const res = await fetch(`${base}/api/v1/admin/hooks?dry=1`, {
      method: "POST",
      headers: { "user-agent": "forge-cli/2.1", referer: "https://forge.example/admin" },
    });
    expect(await res.text()).toBe("abcde");
    await fetch(`${base}/api/v1/teams/42`).then((r) => r.text());

    const logs = await stored(client);
    const hook = byResource(logs, "/api/v1/admin/hooks?dry=1");
    expect(res.headers.get("x-request-id")).toBe(idOf(hook));
    expect({
      method: hook.method,
      httpVersion: hook.httpVersion,
      status: hook.status,
      responseSize: hook.responseSize,
      ip: hook.ip,
      userAgent: hook.userAgent,
      referrer: hook.referrer,
      host: hook.host,
      urlMapEntry: hook.urlMapEntry,
      finished: hook.finished,
      wasLoadingRequest: hook.wasLoadingRequest,
      appId: hook.appId,
      versionId: hook.versionId,
    }).toEqual({
      method: "POST",
      httpVersion: "HTTP/1.1",
      status: 201,
      responseSize: 5n,
      ip: "127.0.0.1",
      userAgent: "forge-cli/2.1",
      referrer: "https://forge.example/admin",
      host: base.slice("http://".length),
      urlMapEntry: "/api/v1/admin/hooks",
      finished: true,
      wasLoadingRequest: true,
      appId: "forge",
      versionId: "v1",
    });
    expect(hook.latency).toBe(hook.endTime - hook.startTime);
    expect(hook.latency).toBeGreaterThanOrEqual(15_000n);
    expect(hook.startTime).toBeGreaterThanOrEqual(before - 1000n);
    expect(hook.startTime).toBeLessThan(before + 60_000_000n);
    expect(lines(hook)).toEqual(["1 creating a hook from forge-cli/2.1", "2 after an await"]);
    expect(hook.line[0]!.time).toBeGreaterThanOrEqual(hook.startTime);
    expect(hook.line[1]!.time - hook.line[0]!.time).toBeGreaterThanOrEqual(15_000n);

    const team = byResource(logs, "/api/v1/teams/42");
    expect([team.urlMapEntry, team.status, team.wasLoadingRequest, team.method]).toEqual(["/api/v1/teams/{id}", 201, false, "GET"]);
    expect(mw.stats()).toEqual({ requests: 2, linesDropped: 0, errors: 0 });
  });

  it("takes the request id from X-Request-Id when it is one, and makes unique ones otherwise", async () => {
    const client = reqlogClient();
    const base = await nodeServer(requestLogger(client), (_req, res) => res.end());
    const given = await fetch(`${base}/given`, { headers: { "x-request-id": "edge-7f3a" } });
    const tooLong = await fetch(`${base}/too-long`, { headers: { "x-request-id": "x".repeat(300) } });
    const made = await Promise.all([1, 2, 3].map((i) => fetch(`${base}/made/${i}`)));
    expect(given.headers.get("x-request-id")).toBe("edge-7f3a");
    const logs = await stored(client);
    expect(idOf(byResource(logs, "/given"))).toBe("edge-7f3a");
    expect(idOf(byResource(logs, "/too-long"))).toBe(tooLong.headers.get("x-request-id"));
    expect(idOf(byResource(logs, "/too-long"))).not.toContain("xxx");
    const madeIds = [1, 2, 3].map((i) => idOf(byResource(logs, `/made/${i}`)));
    expect(new Set(madeIds).size).toBe(3);
    expect(made.map((r) => r.headers.get("x-request-id"))).toEqual(madeIds);
  });

  it("believes X-Forwarded-For only as far as trustProxy says", async () => {
    const client = reqlogClient();
    const untrusting = await nodeServer(requestLogger(client), (_req, res) => res.end());
    const trusting = await nodeServer(requestLogger(client, { trustProxy: 1 }), (_req, res) => res.end());
    const headers = { "x-forwarded-for": "198.51.100.1, 203.0.113.7" };
    await fetch(`${untrusting}/untrusting`, { headers });
    await fetch(`${trusting}/trusting`, { headers });
    const logs = await stored(client);
    expect(byResource(logs, "/untrusting").ip).toBe("127.0.0.1");
    expect(byResource(logs, "/trusting").ip).toBe("203.0.113.7");
  });

  it("writes the request as in progress when it starts, and completes it when it ends", async () => {
    const client = reqlogClient();
    const gate = deferred();
    const inHandler = deferred();
    const base = await nodeServer(requestLogger(client, { inProgress: true }), async (_req, res) => {
      log.info("waiting for the object store");
      inHandler.resolve();
      await gate.promise;
      res.end("done");
    });
    const answered = fetch(`${base}/slow`).then((r) => r.text());
    await inHandler.promise;
    const running = byResource(await stored(client), "/slow");
    expect([running.finished, running.status, running.endTime]).toEqual([false, 0, 0n]);
    gate.resolve();
    expect(await answered).toBe("done");
    const done = byResource(await stored(client), "/slow");
    expect([done.finished, done.status, done.responseSize, idOf(done)]).toEqual([true, 200, 4n, idOf(running)]);
    expect(lines(done)).toEqual(["1 waiting for the object store"]);
  });

  it("records a request whose client went away before the response as 499", async () => {
    const client = reqlogClient();
    const inHandler = deferred();
    const answered = deferred();
    const base = await nodeServer(requestLogger(client), async (_req, res) => {
      inHandler.resolve();
      await new Promise((resolve) => res.on("close", resolve));
      res.end("too late");
      answered.resolve();
    });
    const req = httpRequest(`${base}/abandoned`);
    req.on("error", () => {});
    req.end();
    await inHandler.promise;
    req.destroy();
    await answered.promise;
    const abandoned = byResource(await stored(client), "/abandoned");
    expect([abandoned.status, abandoned.responseSize]).toEqual([499, 0n]);
  });

  it("keeps each request's lines with it across concurrent requests, timers and awaits", async () => {
    const client = reqlogClient();
    const base = await nodeServer(requestLogger(client), async (req, res) => {
      const n = Number(req.url!.slice(1));
      log.debug(`start ${n}`);
      await sleep(n % 7);
      setTimeout(() => {
        log.info(`timer ${n}`);
        void Promise.resolve().then(() => {
          log.error(`end ${n}`);
          res.end();
        });
      }, n % 5);
    });
    await Promise.all(Array.from({ length: 30 }, (_, n) => fetch(`${base}/${n}`).then((r) => r.text())));
    const logs = await stored(client);
    expect(logs).toHaveLength(30);
    for (const l of logs) {
      const n = l.resource.slice(1);
      expect(lines(l)).toEqual([`0 start ${n}`, `1 timer ${n}`, `3 end ${n}`]);
    }
  });

  it("keeps at most maxLinesPerRequest lines and cuts messages over maxLineBytes", async () => {
    const client = reqlogClient({ maxLinesPerRequest: 3, maxLineBytes: 100 });
    const mw = requestLogger(client);
    const base = await nodeServer(mw, (_req, res) => {
      log.info("é".repeat(200));
      for (let i = 1; i < 6; i++) log.info(`line ${i}`);
      res.end();
    });
    await fetch(`${base}/chatty`).then((r) => r.text());
    const chatty = byResource(await stored(client), "/chatty");
    expect(chatty.line.map((l) => l.logMessage).slice(1)).toEqual(["line 1", "line 2"]);
    expect(chatty.line[0]!.logMessage).toBe(`${"é".repeat(30)} …[cut 340 bytes]`);
    expect(Buffer.byteLength(chatty.line[0]!.logMessage)).toBeLessThanOrEqual(100);
    expect(mw.stats().linesDropped).toBe(3);
  });

  it("names the template of a routes file, and skips what `skip` names", async () => {
    const dir = mkdtempSync(join(tmpdir(), "reqlog-routes-"));
    closers.push(async () => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, "routes.txt"), "# the app's own routes\n/hello/{name}\n");
    const client = reqlogClient();
    const options: RequestLoggerOptions = { routes: join(dir, "routes.txt"), skip: (req) => req.url === "/healthz" };
    const base = await nodeServer(requestLogger(client, options), (_req, res) => res.end("ok"));
    await fetch(`${base}/hello/alice`).then((r) => r.text());
    await fetch(`${base}/healthz`).then((r) => r.text());
    await fetch(`${base}/api/v1/teams/1`).then((r) => r.text());
    const logs = await stored(client);
    expect(logs.map((l) => [l.resource, l.urlMapEntry]).sort()).toEqual([
      ["/api/v1/teams/1", "/api/v1/teams/{id}"],
      ["/hello/alice", "/hello/{name}"],
    ]);
  });

  it("never holds or fails the app's responses while reqlog is down", async () => {
    const client = reqlogClient({ server: `127.0.0.1:${await freePort()}`, retry: { initialMs: 10, maxMs: 50 } });
    const mw = requestLogger(client);
    const base = await nodeServer(mw, (_req, res) => {
      log.info("serving");
      res.end("ok");
    });
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => fetch(`${base}/r${i}`).then(async (r) => [r.status, await r.text()])));
    expect(answers.every(([status, body]) => status === 200 && body === "ok")).toBe(true);
    expect(mw.stats()).toEqual({ requests: 50, linesDropped: 0, errors: 0 });
    const { buffered, acknowledged } = client.stats();
    expect([buffered.records, buffered.lines, acknowledged.records]).toEqual([50, 50, 0]);
  });
});

describe("requestLogger as Express middleware", () => {
  async function expressApp(client: ReqlogClient) {
    const app = express();
    app.use(requestLogger(client, { routes: forgeRouteTable }));
    app.use(express.json());
    const api = express.Router();
    api.get("/teams/:id", (req, res) => {
      log.info(`team ${req.params.id}`);
      res.json({ id: Number(req.params.id) });
    });
    api.post("/admin/hooks", async (req, res) => {
      await sleep(5);
      log.info(`creating a ${(req.body as { type: string }).type} hook`);
      res.status(201).json({ id: 1 });
    });
    api.get("/repos/:owner/:repo/actions/artifacts/:artifact_id/zip", (_req) => {
      throw new Error("object store unreachable");
    });
    app.use("/api/v1", api);
    app.use(((err, _req, res, _next) => {
      log.error(err);
      res.status(500).json({ message: "internal error" });
    }) as express.ErrorRequestHandler);
    const server = app.listen(0, "127.0.0.1");
    await new Promise((resolve) => server.once("listening", resolve));
    closers.push(() => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    });
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  it("names the matched route with its mount path, keeps lines across body parsing, and falls back to the route table", async () => {
    const client = reqlogClient();
    const base = await expressApp(client);
    await fetch(`${base}/api/v1/teams/9?expand=1`).then((r) => r.text());
    const created = await fetch(`${base}/api/v1/admin/hooks`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ type: "forgejo" }),
    });
    expect(created.status).toBe(201);
    expect((await fetch(`${base}/api/v1/repos/alice/app/branches`)).status).toBe(404);
    expect((await fetch(`${base}/nowhere`)).status).toBe(404);
    const logs = await stored(client);
    const team = byResource(logs, "/api/v1/teams/9?expand=1");
    expect([team.urlMapEntry, team.status, lines(team)]).toEqual(["/api/v1/teams/{id}", 200, ["1 team 9"]]);
    expect(team.responseSize).toBe(BigInt('{"id":9}'.length));
    const hook = byResource(logs, "/api/v1/admin/hooks");
    expect([hook.urlMapEntry, hook.status, hook.method, lines(hook)]).toEqual(["/api/v1/admin/hooks", 201, "POST", ["1 creating a forgejo hook"]]);
    expect(byResource(logs, "/api/v1/repos/alice/app/branches").urlMapEntry).toBe("/api/v1/repos/{owner}/{repo}/branches");
    expect(byResource(logs, "/nowhere").urlMapEntry).toBe("");
  });

  it("records a handler's error as its 500 with the error line and its stack", async () => {
    const client = reqlogClient();
    const base = await expressApp(client);
    expect((await fetch(`${base}/api/v1/repos/alice/app/actions/artifacts/3/zip`)).status).toBe(500);
    const failed = byResource(await stored(client), "/api/v1/repos/alice/app/actions/artifacts/3/zip");
    expect([failed.status, failed.urlMapEntry]).toEqual([500, "/api/v1/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/zip"]);
    expect(failed.line).toHaveLength(1);
    expect(failed.line[0]!.level).toBe(3);
    expect(failed.line[0]!.logMessage).toMatch(/^Error: object store unreachable\n    at /);
  });
});

describe("reqlogFastify", () => {
  async function fastifyApp(client: ReqlogClient): Promise<string> {
    const app: FastifyInstance = Fastify();
    await app.register(reqlogFastify, { client, routes: forgeRouteTable });
    app.get("/api/v1/teams/:id", async (request) => {
      log.info(`team ${(request.params as { id: string }).id}`);
      return { id: Number((request.params as { id: string }).id) };
    });
    app.post("/api/v1/admin/hooks", async (request, reply) => {
      await sleep(5);
      log.warning(`creating a ${(request.body as { type: string }).type} hook`);
      reply.code(201);
      return { id: 1 };
    });
    app.get("/api/v1/repos/:owner/:repo/raw/*", async () => "file content");
    const address = await app.listen({ port: 0, host: "127.0.0.1" });
    closers.push(() => app.close());
    return address;
  }

  it("records each request with Fastify's matched route as its template and the handler's lines", async () => {
    const client = reqlogClient();
    const base = await fastifyApp(client);
    await fetch(`${base}/api/v1/teams/3`).then((r) => r.text());
    const created = await fetch(`${base}/api/v1/admin/hooks`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-request-id": "ff-1" },
      body: JSON.stringify({ type: "gitea" }),
    });
    expect([created.status, created.headers.get("x-request-id")]).toEqual([201, "ff-1"]);
    await fetch(`${base}/api/v1/repos/alice/app/raw/docs/README.md`).then((r) => r.text());
    expect((await fetch(`${base}/api/v1/repos/alice/app/branches`)).status).toBe(404);
    const logs = await stored(client);
    const team = byResource(logs, "/api/v1/teams/3");
    expect([team.urlMapEntry, team.status, team.responseSize, lines(team)]).toEqual(["/api/v1/teams/{id}", 200, 8n, ["1 team 3"]]);
    const hook = byResource(logs, "/api/v1/admin/hooks");
    expect([idOf(hook), hook.urlMapEntry, hook.status, lines(hook)]).toEqual(["ff-1", "/api/v1/admin/hooks", 201, ["2 creating a gitea hook"]]);
    expect(byResource(logs, "/api/v1/repos/alice/app/raw/docs/README.md").urlMapEntry).toBe("/api/v1/repos/{owner}/{repo}/raw/{path*}");
    expect(byResource(logs, "/api/v1/repos/alice/app/branches").urlMapEntry).toBe("/api/v1/repos/{owner}/{repo}/branches");
  });
});

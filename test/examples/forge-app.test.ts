import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createReqlogClient, type ReqlogClient } from "reqlog/client";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../../bench/harness/child-server.js";
import { createForgeApp, type ForgeAppOptions } from "../../examples/forge-app/forge-app.js";
import { runForgeTraffic } from "../../examples/forge-app/forge-traffic.js";
import { readAll } from "../helpers/read-all.js";
import { useTestServer } from "../helpers/test-server.js";

const ts = useTestServer();
const signingKey = "test-signing-key";
const opened: { reqlog: ReqlogClient; server: Server }[] = [];
afterEach(async () => {
  for (const { reqlog, server } of opened.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await reqlog.close({ timeoutMs: 500 }).catch(() => {});
  }
});

/** The example app with its request logger sending to the test's reqlog server; resolves with its base URL. */
async function forge(options: Partial<ForgeAppOptions> = {}): Promise<{ base: string; reqlog: ReqlogClient }> {
  const reqlog = createReqlogClient({ server: ts.server.address, app: "forge", version: "example", flushIntervalMs: 10 });
  const { app } = createForgeApp({ reqlog, signingKey, ...options });
  const server = app.listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  opened.push({ reqlog, server });
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, reqlog };
}

const call = async (base: string, method: string, path: string, body?: unknown) => {
  const res = await fetch(base + path, {
    method,
    redirect: "manual",
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const json = res.headers.get("content-type")?.startsWith("application/json") ? (JSON.parse(text) as Record<string, unknown>) : undefined;
  return { status: res.status, headers: res.headers, text, json };
};

const zip = "/api/v1/repos/alice/app/actions/artifacts/1/zip";

describe("the example forge app", () => {
  it("answers an artifact's zip route with a 302 to its raw route, signed for an hour", async () => {
    let now = Date.parse("2026-11-20T10:00:00Z");
    const { base } = await forge({ now: () => now });
    const redirect = await call(base, "GET", zip);
    expect(redirect.status).toBe(302);
    const location = redirect.headers.get("location")!;
    expect(location).toMatch(/^\/api\/v1\/repos\/alice\/app\/actions\/artifacts\/1\/zip\/raw\?expires=(\d+)&sig=[\w-]{43}$/);
    expect(Number(new URL(location, base).searchParams.get("expires"))).toBe(now / 1000 + 3600);
    const raw = await fetch(base + location);
    expect([raw.status, raw.headers.get("content-type"), raw.headers.get("content-disposition")]).toEqual([
      200, "application/zip", "attachment; filename=binaries.zip",
    ]);
    expect([...new Uint8Array(await raw.arrayBuffer()).subarray(0, 4)]).toEqual([0x50, 0x4b, 0x05, 0x06]);

    now += 59 * 60 * 1000;
    expect((await call(base, "GET", location)).status).toBe(200);
    now += 60 * 1000 + 1000;
    expect(await call(base, "GET", location)).toMatchObject({ status: 401, json: { message: "signed URL expired" } });
  });

  it("refuses a raw route whose signature is invalid or altered, or names another artifact, with 401", async () => {
    const { base } = await forge();
    const location = (await call(base, "GET", zip)).headers.get("location")!;
    const sig = new URL(location, base).searchParams.get("sig")!;
    const flipped = location.replace(`sig=${sig}`, `sig=${sig[0] === "A" ? "B" : "A"}${sig.slice(1)}`);
    const invalid = { status: 401, json: { message: "signed URL signature is invalid" } };
    expect(await call(base, "GET", flipped)).toMatchObject(invalid);
    expect(await call(base, "GET", location.replace("/artifacts/1/", "/artifacts/2/"))).toMatchObject(invalid);
    const later = location.replace(/expires=(\d+)/, (_, e: string) => `expires=${Number(e) + 3600}`);
    expect(await call(base, "GET", later)).toMatchObject(invalid);
    expect(await call(base, "GET", `${zip}/raw`)).toMatchObject({ status: 401, json: { message: "signed URL is missing its expires or sig" } });
    expect((await call(base, "GET", "/api/v1/repos/alice/app/actions/artifacts/9/zip")).status).toBe(404);
  });

  it("answers star endpoints 403 'Stars are disabled.' when stars are off, and serves them when on", async () => {
    const off = await forge();
    const disabled = { status: 403, json: { message: "Stars are disabled." } };
    expect(await call(off.base, "PUT", "/api/v1/user/starred/alice/app")).toMatchObject(disabled);
    expect(await call(off.base, "DELETE", "/api/v1/user/starred/alice/app")).toMatchObject(disabled);
    expect(await call(off.base, "GET", "/api/v1/user/starred/alice/app")).toMatchObject(disabled);
    expect(await call(off.base, "GET", "/api/v1/user/starred")).toMatchObject(disabled);
    expect(await call(off.base, "GET", "/api/v1/repos/alice/app/stargazers")).toMatchObject(disabled);

    const on = await forge({ starsEnabled: true });
    expect((await call(on.base, "GET", "/api/v1/user/starred/alice/app")).status).toBe(404);
    expect((await call(on.base, "PUT", "/api/v1/user/starred/alice/app")).status).toBe(204);
    expect((await call(on.base, "GET", "/api/v1/user/starred/alice/app")).status).toBe(204);
    expect((await call(on.base, "GET", "/api/v1/repos/alice/app/stargazers")).json).toEqual([{ login: "alice" }]);
  });

  it("creates system and default admin webhooks, lists them by type, and answers 404 for a missing one", async () => {
    const { base } = await forge();
    const config = (url: string, isSystem?: boolean) => ({ url, content_type: "json", secret: "s3cret", ...(isSystem === undefined ? {} : { is_system_webhook: isSystem }) });
    const system = await call(base, "POST", "/api/v1/admin/hooks", { type: "forgejo", events: ["create"], config: config("https://ci.example/h", true) });
    const byDefault = await call(base, "POST", "/api/v1/admin/hooks", { type: "forgejo", config: config("https://chat.example/h") });
    const explicitDefault = await call(base, "POST", "/api/v1/admin/hooks", { type: "forgejo", config: config("https://mail.example/h", false) });
    expect(system).toMatchObject({ status: 201, json: { id: 1, type: "forgejo", active: true, events: ["create"], config: { url: "https://ci.example/h", content_type: "json", is_system_webhook: true } } });
    expect(JSON.stringify(system.json)).not.toContain("s3cret");
    expect(byDefault.json).toMatchObject({ id: 2, config: { is_system_webhook: false } });
    expect(explicitDefault.json).toMatchObject({ id: 3, config: { is_system_webhook: false } });

    const ids = async (query: string) => ((await call(base, "GET", `/api/v1/admin/hooks${query}`)).json as unknown as { id: number }[]).map((h) => h.id);
    expect(await ids("")).toEqual([1]);
    expect(await ids("?type=system")).toEqual([1]);
    expect(await ids("?type=default")).toEqual([2, 3]);
    expect(await ids("?type=all")).toEqual([1, 2, 3]);
    expect(await call(base, "GET", "/api/v1/admin/hooks?type=both")).toMatchObject({ status: 422, json: { message: "type must be system, default or all" } });
    expect(await call(base, "POST", "/api/v1/admin/hooks", { type: "forgejo", config: {} })).toMatchObject({ status: 422, json: { message: "config.url must be an http(s) URL" } });

    expect(await call(base, "PATCH", "/api/v1/admin/hooks/2", { active: false, events: ["push"] })).toMatchObject({ status: 200, json: { id: 2, active: false, events: ["push"] } });
    expect((await call(base, "GET", "/api/v1/admin/hooks/2")).json).toMatchObject({ active: false });
    expect(await call(base, "PATCH", "/api/v1/admin/hooks/2", { config: { is_system_webhook: true } })).toMatchObject({ status: 422 });
    expect((await call(base, "DELETE", "/api/v1/admin/hooks/2")).status).toBe(204);
    const missing = { status: 404, json: { message: "webhook not found" } };
    for (const method of ["GET", "PATCH", "DELETE"]) {
      expect(await call(base, method, "/api/v1/admin/hooks/2", method === "PATCH" ? { active: true } : undefined)).toMatchObject(missing);
    }
    expect(await call(base, "GET", "/api/v1/admin/hooks/not-a-number")).toMatchObject(missing);
  });

  it("answers GET /teams/{id} with the organization filled in, 404 for another", async () => {
    const { base } = await forge();
    expect(await call(base, "GET", "/api/v1/teams/1")).toMatchObject({
      status: 200,
      json: { id: 1, permission: "owner", includes_all_repositories: true, organization: { name: "infra", username: "infra", visibility: "public" } },
    });
    expect((await call(base, "GET", "/api/v1/teams/77")).status).toBe(404);
  });

  it("sends its traffic script's requests to reqlog, where Read, reqlog read, Stats and Usage show them", async () => {
    const { base, reqlog } = await forge();
    const traffic = await runForgeTraffic(base, { signingKey, extra: 30 });
    expect(traffic.wrong).toEqual([]);
    await reqlog.flush({ timeoutMs: 5000 });

    const stored = await readAll(ts.client, "forge");
    expect(stored).toHaveLength(traffic.sent);
    const statuses = new Map<number, number>();
    for (const l of stored) statuses.set(l.status, (statuses.get(l.status) ?? 0) + 1);
    expect(statuses).toEqual(traffic.statuses);
    const zips = stored.filter((l) => l.status === 302);
    expect(zips.length).toBe(traffic.statuses.get(302));
    for (const l of zips) {
      expect([l.status, l.urlMapEntry]).toEqual([302, "/api/v1/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/zip"]);
      expect(l.line.map((line) => line.logMessage)).toEqual([expect.stringMatching(/^redirecting artifact \d+ download to its raw route$/)]);
    }
    const stars = stored.filter((l) => l.status === 403);
    expect(stars.every((l) => l.line.some((line) => line.level === 2 && line.logMessage === "Stars are disabled."))).toBe(true);
    const expired = stored.find((l) => l.status === 401 && l.line.some((line) => line.logMessage === "signed URL expired (artifact 1)"));
    expect(expired?.urlMapEntry).toBe("/api/v1/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/zip/raw");

    const read = await runCli(["read", "--server", ts.server.address, "--app", "forge", "--severity", "warning", "--regex", "starred"]);
    expect(read.code).toBe(0);
    expect(read.stdout).toMatch(/^127\.0\.0\.1 - - \[[^\]]+\] "PUT \/api\/v1\/user\/starred\/alice\/app HTTP\/1\.1" 403 33 "-" "forge-traffic\/1\.0"\n\t\S+ WARNING Stars are disabled\.\n/);

    const stats = await ts.client.stats({ appId: "forge" });
    expect(Number(stats.total!.requests)).toBe(traffic.sent);
    const route = (r: string) => Number(stats.topRouteByRequests.find((t) => t.route === r)?.figures?.requests ?? 0);
    expect(route("/api/v1/user/starred/{owner}/{repo}")).toBe(stored.filter((l) => l.urlMapEntry === "/api/v1/user/starred/{owner}/{repo}").length);
    expect(route("/api/v1/admin/hooks/{id}")).toBeGreaterThan(0);
    const usage = await ts.client.usage({ appId: "forge", combineVersions: true, resolutionHours: 0 });
    expect(Number(usage.summary!.count)).toBe(traffic.sent);
  });
});

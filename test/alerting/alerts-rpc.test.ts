import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AlertState } from "../../gen/reqlog/v1/log_service_pb.js";
import { type AlertmanagerServer, startAlertmanager, startWebhookReceiver, type WebhookReceiver } from "../helpers/alertmanager.js";
import { freePort } from "../helpers/local-process.js";
import { failureOf } from "../helpers/test-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

/** Posts alerts to Alertmanager as Prometheus does (its v2 API). */
async function post(am: AlertmanagerServer, alerts: object[]): Promise<void> {
  const response = await fetch(`${am.url}/api/v2/alerts`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(alerts),
  });
  expect(response.status).toBe(200);
}

const route = "/api/v1/teams/{id}";
const startsAt = "2026-11-25T10:00:00Z";
const errors = {
  labels: { alertname: "RouteServerErrors", app: "forge", http_route: route, severity: "page" },
  annotations: { summary: "forge: 40% of /api/v1/teams/{id} answered 5xx", runbook: "Open the route's requests.", runbook_url: "https://runbooks.example/5xx" },
  startsAt,
  generatorURL: "http://prometheus.example/graph?g0.expr=x",
};

describe("the Alerts RPC, on a real Alertmanager", () => {
  let am: AlertmanagerServer;
  let hook: WebhookReceiver;
  let ts: TestServer;

  beforeAll(async () => {
    hook = await startWebhookReceiver();
    am = await startAlertmanager({ webhook: hook.url });
    ts = await startTestServer({ alertmanager: { url: am.url, pollIntervalMs: 60_000 } });
  });
  afterAll(async () => {
    await ts?.close();
    await am?.stop();
    await hook?.close();
  });

  it("lists the alerts Alertmanager holds for the app, with their route, runbook and labels", async () => {
    await post(am, [errors, { labels: { alertname: "AppTrafficStopped", app: "ci", severity: "page" }, startsAt }]);
    const { alert } = await ts.client.alerts({ appId: "forge" });
    expect(alert).toHaveLength(1);
    const [a] = alert;
    expect(a).toMatchObject({
      name: "RouteServerErrors",
      state: AlertState.FIRING,
      startTime: BigInt(Date.parse(startsAt) / 1000),
      route,
      severity: "page",
      summary: errors.annotations.summary,
      runbook: "Open the route's requests.",
      runbookUrl: "https://runbooks.example/5xx",
      generatorUrl: errors.generatorURL,
    });
    expect(a!.endTime).toBe(0n);
    expect(a!.label.map((l) => `${l.name}=${l.value}`)).toEqual(["alertname=RouteServerErrors", "app=forge", `http_route=${route}`, "severity=page"]);
    expect((await ts.client.alerts({ appId: "docs" })).alert).toEqual([]);
  });

  it("keeps an alert Alertmanager no longer holds as resolved, at the time it was seen gone", async () => {
    const before = Math.floor(Date.now() / 1000);
    await post(am, [{ ...errors, labels: { ...errors.labels, alertname: "LatencySLOFastBurn" } }]);
    await new Promise((r) => setTimeout(r, 2100)); // past the 2 s an answer from Alertmanager is reused for
    const firing = (await ts.client.alerts({ appId: "forge" })).alert.map((a) => a.name);
    expect(firing).toContain("LatencySLOFastBurn");
    // Prometheus resolves an alert by sending it with endsAt now; Alertmanager then lists it no more.
    await post(am, [{ ...errors, labels: { ...errors.labels, alertname: "LatencySLOFastBurn" }, endsAt: new Date().toISOString() }]);
    await new Promise((r) => setTimeout(r, 2100));
    const { alert } = await ts.client.alerts({ appId: "forge" });
    const resolved = alert.find((a) => a.name === "LatencySLOFastBurn")!;
    expect(resolved.state).toBe(AlertState.RESOLVED);
    expect(Number(resolved.endTime)).toBeGreaterThanOrEqual(before);
    // Firing ones first.
    expect(alert.map((a) => a.state)).toEqual([AlertState.FIRING, AlertState.RESOLVED]);
    // A range that ends before it started holds neither.
    expect((await ts.client.alerts({ appId: "forge", startTime: 1n, endTime: BigInt(Date.parse(startsAt) / 1000) })).alert).toEqual([]);
  });

  it("asks for read:logs on the app, as every read does", async () => {
    const { token: ciOnly } = await ts.backend.tokens.create({ name: "ci", scopes: ["read:logs"], apps: ["ci"] });
    const { token: writer } = await ts.backend.tokens.create({ name: "w", scopes: ["write:logs"] });
    try {
      expect(failureOf(await ts.client.alerts({ appId: "forge" }).catch((e: unknown) => e)).code).toBe(16);
      expect(failureOf(await ts.connect({ token: ciOnly }).alerts({ appId: "forge" }).catch((e: unknown) => e)).code).toBe(7);
      expect(failureOf(await ts.connect({ token: writer }).alerts({ appId: "forge" }).catch((e: unknown) => e)).code).toBe(7);
      expect((await ts.connect({ token: ciOnly }).alerts({ appId: "ci" })).alert.map((a) => a.name)).toEqual(["AppTrafficStopped"]);
    } finally {
      for (const t of await ts.backend.tokens.list()) await ts.backend.tokens.revoke(t.id);
    }
  });
});

describe("the Alerts RPC without a reachable Alertmanager", () => {
  it("is UNIMPLEMENTED on a server started without --alertmanager-url, naming the flag", async () => {
    const ts = await startTestServer();
    try {
      const failure = failureOf(await ts.client.alerts({ appId: "forge" }).catch((e: unknown) => e));
      expect(failure).toEqual({ code: 12, details: "this server shows no alerts: it was started without --alertmanager-url", reason: "INVALID_REQUEST" });
    } finally {
      await ts.close();
    }
  });

  it("is UNAVAILABLE, naming Alertmanager's address and not its password, when Alertmanager does not answer", async () => {
    const port = await freePort();
    const ts = await startTestServer({ alertmanager: { url: `http://ops:s3cret@127.0.0.1:${port}`, pollIntervalMs: 60_000 } });
    try {
      const failure = failureOf(await ts.client.alerts({ appId: "forge" }).catch((e: unknown) => e));
      expect(failure.code).toBe(14);
      expect(failure.details).toMatch(new RegExp(`^cannot read alerts from Alertmanager at http://127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`));
      expect(failure.details).not.toContain("s3cret");
    } finally {
      await ts.close();
    }
  });

  it("refuses a request without app_id or with its range backwards", async () => {
    const ts = await startTestServer();
    try {
      expect(failureOf(await ts.client.alerts({}).catch((e: unknown) => e)).details).toBe("required field not set: app_id");
      expect(failureOf(await ts.client.alerts({ appId: "forge", startTime: 5n, endTime: 4n }).catch((e: unknown) => e)).details).toBe(
        "start_time (5) is after end_time (4)",
      );
    } finally {
      await ts.close();
    }
  });
});

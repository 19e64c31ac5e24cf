/**
 * Alerting end to end, with the real parts: Debian's Prometheus scrapes a
 * real reqlog's /metrics every second and evaluates docs/alerts' rules (on
 * shortened windows), Alertmanager delivers to a webhook receiver here, and
 * the dashboard (Debian's chromium) shows the alert. Traffic is written
 * through reqlog's API, as an app's SDK writes it.
 */
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type RequestLog } from "../../gen/reqlog/v1/log_service_pb.js";
import { type AlertmanagerServer, startAlertmanager, startWebhookReceiver, type WebhookReceiver } from "../helpers/alertmanager.js";
import { launchChromium } from "../helpers/browser.js";
import { minimalLog, rid } from "../helpers/fixtures.js";
import { type PrometheusServer, shortenedRules, startPrometheus } from "../helpers/prometheus.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

// Prometheus needs two scrapes of a series before rate() sees it move; chromium may be installed first.
vi.setConfig({ hookTimeout: 600_000, testTimeout: 180_000 });


const route = "/api/v1/teams/{id}";
let serial = 0;
/** A finished request of app forge that ended now, on /api/v1/teams/N. */
function request(status: number, more: Parameters<typeof minimalLog>[0] = {}): RequestLog {
  const end = BigInt(Date.now()) * 1000n;
  return minimalLog({
    requestId: rid(`t${++serial}`),
    startTime: end - 20_000n,
    endTime: end,
    status,
    resource: `/api/v1/teams/${serial % 50}`,
    responseSize: 512n,
    ...more,
  });
}

/** The value of one sample of reqlog's /metrics (0 when it has none). */
async function metric(ts: TestServer, name: string, labels: string): Promise<number> {
  const text = await (await fetch(`http://${ts.httpAddress}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}{${labels}} `));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1));
}

const teams = `app="forge",module="default",version="v1",http_route="${route}",http_request_method="GET"`;

describe("alerting with Prometheus, Alertmanager and the dashboard", () => {
  let ts: TestServer;
  let hook: WebhookReceiver;
  let am: AlertmanagerServer;
  let prometheus: PrometheusServer;
  let browser: Browser;
  let traffic: ReturnType<typeof setInterval> | undefined;
  let failing = false;

  beforeAll(async () => {
    browser = await launchChromium();
    hook = await startWebhookReceiver();
    am = await startAlertmanager({ webhook: hook.url });
    ts = await startTestServer({
      http: true,
      dashboard: true,
      now: BigInt(Date.now()) * 1000n,
      alertmanager: { url: am.url, pollIntervalMs: 1000 },
    });
    prometheus = await startPrometheus({
      targets: [ts.httpAddress!],
      rules: { "reqlog-rules.yml": shortenedRules() },
      alertmanager: am.url,
    });
  });
  afterAll(async () => {
    clearInterval(traffic);
    await browser?.close();
    await prometheus?.stop();
    await am?.stop();
    await hook?.close();
    await ts?.close();
  });

  it("counts a request once however often its batch is sent, and an in-progress one once it finishes", async () => {
    const batch = [request(200), request(200), request(404)];
    await ts.write(...batch);
    const ok = () => metric(ts, "http_server_request_duration_seconds_count", `${teams},http_response_status_code="200"`);
    const notFound = () => metric(ts, "http_server_request_duration_seconds_count", `${teams},http_response_status_code="404"`);
    expect([await ok(), await notFound()]).toEqual([2, 1]);
    await ts.write(...batch);
    await ts.write(...batch);
    expect([await ok(), await notFound()]).toEqual([2, 1]);
    const open = request(200, { finished: false });
    await ts.write(open);
    expect(await ok()).toBe(2);
    await ts.write(request(200, { requestId: open.requestId }));
    await ts.write(request(200, { requestId: open.requestId }));
    expect(await ok()).toBe(3);
    // Prometheus scrapes what reqlog counted.
    await vi.waitFor(async () => {
      const [sum] = await prometheus.query(`sum(http_server_request_duration_seconds_count{app="forge"})`);
      expect(sum?.value).toBe(4);
    }, { timeout: 30_000, interval: 500 });
  });

  it("fires the 5xx rule of docs/alerts on a route's 5xx burst, delivers it to the webhook, and the dashboard shows it", async () => {
    // Every shipped alert carries a runbook line (as Prometheus loaded them).
    const groups = ((await (await fetch(`${prometheus.url}/api/v1/rules`)).json()) as { data: { groups: { rules: { type: string; name: string; annotations?: Record<string, string> }[] }[] } }).data.groups;
    const alerting = groups.flatMap((g) => g.rules).filter((r) => r.type === "alerting");
    expect(alerting.map((r) => r.name).sort()).toEqual(["AppTrafficStopped", "LatencySLOFastBurn", "LatencySLOSlowBurn", "ReqlogDown", "RouteServerErrors", "SignedUrlRejectionsSpike"]);
    expect(alerting.filter((r) => !r.annotations?.runbook)).toEqual([]);

    // Traffic as an app sends it: a few requests every 100 ms, 5xx once `failing`.
    traffic = setInterval(() => {
      void ts.write(request(200), request(200), ...(failing ? [request(500), request(503)] : []));
    }, 100);
    await vi.waitFor(async () => expect((await prometheus.query(`app_route:http_server_requests:rate5m{app="forge"}`)).length).toBe(1), {
      timeout: 30_000,
      interval: 500,
    });
    const burst = Date.now();
    failing = true;
    const fired = await hook.next((n) => n.status === "firing" && n.commonLabels.alertname === "RouteServerErrors", 60_000);
    console.log(`5xx burst to webhook: ${((fired.receivedAt - burst) / 1000).toFixed(1)} s (scrape and rule interval 1 s, group_wait 1 s)`);
    expect(fired.commonLabels).toMatchObject({ alertname: "RouteServerErrors", app: "forge", http_route: route, severity: "page" });
    expect(fired.alerts[0]!.annotations.runbook).toMatch(/^Open the route's requests in reqlog/);

    // The dashboard: the Overview's alerts card and its charts' alert bands.
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors: string[] = [];
    page.on("pageerror", (err) => errors.push(err.message));
    try {
      await page.goto(`http://${ts.httpAddress}/?app=forge&range=6h`);
      const alert = page.locator('[data-testid="alert"][data-alert="RouteServerErrors"]');
      await alert.waitFor();
      expect(await alert.getAttribute("data-state")).toBe("firing");
      expect(await alert.locator(".alert-route").textContent()).toBe(route);
      expect(await page.locator('[data-testid="alerts-firing"]').textContent()).toBe("1 firing");
      await page.locator('[data-testid="chart-errors"][data-state="ready"] canvas').waitFor();
      expect(Number(await page.locator('[data-testid="chart-errors"]').getAttribute("data-alert-bands"))).toBeGreaterThanOrEqual(1);
      // Its link: the Requests view of that route over the alert's period, 5xx among them.
      await alert.locator('[data-testid="alert-requests"]').click();
      await page.locator('[data-testid="request-list"] tr.request').first().waitFor();
      const url = new URL(page.url());
      expect(url.searchParams.get("view")).toBe("requests");
      expect(url.searchParams.get("regex")).toBe('"[A-Z]+ /api/v1/teams/[^/?" ]+[?" ]');
      // ...from a minute before the alert started (after the burst began, before the webhook heard of it) to a minute past now.
      const from = Date.parse(url.searchParams.get("from")!) / 1000;
      const to = Date.parse(url.searchParams.get("to")!) / 1000;
      expect(from).toBeGreaterThan(burst / 1000 - 61);
      expect(from).toBeLessThan(fired.receivedAt / 1000 - 59);
      expect(to).toBeGreaterThan(fired.receivedAt / 1000 + 59);
      const resources = await page.locator('[data-testid="request-list"] tr.request td.resource').allTextContents();
      expect(resources.length).toBeGreaterThan(0);
      expect(resources.every((r) => /^\/api\/v1\/teams\/\d+$/.test(r))).toBe(true);
      const statuses = await page.locator('[data-testid="request-list"] tr.request .status').allTextContents();
      expect(statuses).toContain("500");
    } finally {
      await page.close();
    }
    expect(errors).toEqual([]);

    // The 5xx stop: Alertmanager sends the resolution, and reqlog keeps the period as resolved.
    failing = false;
    await hook.next((n) => n.status === "resolved" && n.commonLabels.alertname === "RouteServerErrors", 90_000);
    await vi.waitFor(async () => {
      const { alert } = await ts.client.alerts({ appId: "forge" });
      const period = alert.find((a) => a.name === "RouteServerErrors");
      expect(period?.endTime).toBeGreaterThan(0n);
      // Its period ends after it began, by this server's clock, not ahead of now.
      expect(period!.endTime).toBeGreaterThanOrEqual(period!.startTime);
      expect(Number(period!.endTime)).toBeLessThanOrEqual(Date.now() / 1000 + 1);
    }, { timeout: 30_000, interval: 1000 });
    clearInterval(traffic);
  });

  it("holds an app to its series cap with 10,000 distinct routes: the rest count under http_route=\"other\"", async () => {
    const before = await metric(ts, "reqlog_metrics_overflow_total", 'app="scanner",metric="http_server_request_duration_seconds"');
    expect(before).toBe(0);
    for (let from = 0; from < 10_000; from += 1000) {
      await ts.write(
        ...Array.from({ length: 1000 }, (_, i) => request(404, { appId: "scanner", urlMapEntry: `/probe/${from + i}`, requestId: rid(`s${from + i}`) })),
      );
    }
    const scanner = 'app="scanner",module="default",version="v1"';
    expect(await metric(ts, "reqlog_request_metrics_series", 'app="scanner"')).toBe(2000);
    expect(await metric(ts, "reqlog_metrics_overflow_total", 'app="scanner",metric="http_server_request_duration_seconds"')).toBe(8000);
    expect(
      await metric(ts, "http_server_request_duration_seconds_count", `${scanner},http_route="other",http_request_method="GET",http_response_status_code="404"`),
    ).toBe(8000);
    // What Prometheus stores of it: 2,000 routes and "other", every request counted.
    await vi.waitFor(async () => {
      const [series] = await prometheus.query('count(http_server_request_duration_seconds_count{app="scanner"})');
      const [requests] = await prometheus.query('sum(http_server_request_duration_seconds_count{app="scanner"})');
      expect([series?.value, requests?.value]).toEqual([2001, 10_000]);
    }, { timeout: 30_000, interval: 500 });
    const [up] = await prometheus.query('up{job="reqlog"}');
    expect(up?.value).toBe(1);
  });
});

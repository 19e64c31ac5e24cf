import { create } from "@bufbuild/protobuf";
import type { Browser, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { LogLineSchema, type RequestLog } from "../../gen/reqlog/v1/log_service_pb.js";
import { launchChromium } from "../helpers/browser.js";
import { minimalLog, rid } from "../helpers/fixtures.js";
import { callError } from "../helpers/test-client.js";
import { useTestServer } from "../helpers/test-server.js";

const hour = 3600;
const h0 = 1_795_003_200; // 2026-11-18T12:00:00Z, a whole hour
const usec = (seconds: number) => BigInt(seconds) * 1_000_000n;
const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

/**
 * Forty requests over three hours: two versions, statuses 200/404/500,
 * latencies 7–280 ms, app lines on some (INFO on every third, ERROR on
 * every fifth), two hosts; and one request still in progress.
 */
function seed(): RequestLog[] {
  const resources = (i: number) =>
    [`/api/v1/repos/alice/app/commits?limit=${i}`, `/api/v1/teams/${i}`, "/api/v1/repos/bob/cli/commits", `/api/v1/admin/hooks/${i}`][i % 4]!;
  const logs = Array.from({ length: 40 }, (_, i) => {
    const start = usec(h0 + i * 240);
    const latency = BigInt((i + 1) * 7_000);
    const line = [
      ...(i % 3 === 0 ? [create(LogLineSchema, { time: start + 1000n, level: 1, logMessage: `listing commits for r${i}` })] : []),
      ...(i % 5 === 0 ? [create(LogLineSchema, { time: start + 2000n, level: 3, logMessage: `cannot reach object storage (r${i})` })] : []),
    ];
    return minimalLog({
      requestId: rid(`r${i}`),
      versionId: i < 20 ? "v1" : "v2",
      startTime: start,
      endTime: start + latency,
      resource: resources(i),
      status: i % 10 === 9 ? 500 : i % 10 === 4 ? 404 : 200,
      responseSize: BigInt(100 * i),
      host: i % 2 === 0 ? "forge.example" : "dl.forge.example",
      line,
    });
  });
  const live = minimalLog({ requestId: rid("live"), startTime: usec(h0 + 2 * hour), finished: false, resource: "/api/v1/repos/alice/app/commits" });
  return [...logs, live];
}

/** The seeded requests' ids, newest first (as Read lists them), that satisfy `keep`. */
function expectedIds(logs: RequestLog[], keep: (log: RequestLog) => boolean): string[] {
  return logs
    .filter((l) => l.finished && keep(l))
    .sort((a, b) => Number(b.endTime - a.endTime))
    .map((l) => new TextDecoder().decode(l.requestId));
}

let browser: Browser;
// The install of Debian's chromium, when it is missing, can take a while.
beforeAll(async () => {
  browser = await launchChromium();
}, 600_000);
afterAll(async () => {
  await browser?.close();
});

describe("the dashboard", () => {
  const ts = useTestServer({ http: true, dashboard: true });
  let page: Page;
  let pageErrors: string[] = [];

  const open = async (query: string) => {
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    pageErrors = [];
    page.on("pageerror", (err) => pageErrors.push(err.message));
    await page.goto(`http://${ts.httpAddress}/${query}`);
    return page;
  };
  const listed = (testid: string) => page.locator(`[data-testid="${testid}"] tr.request`).evaluateAll((rows) => rows.map((r) => r.getAttribute("data-request-id")));
  const ready = (testid: string) => page.locator(`[data-testid="${testid}"][data-state="ready"]`).waitFor();
  const kpi = async (id: string) => page.locator(`[data-testid="${id}"]`).getAttribute("data-value");

  afterEach(async () => {
    await page?.close();
    expect(pageErrors).toEqual([]);
  });

  it("shows chart totals equal to what Usage and Stats answer for the range", async () => {
    await ts.write(...seed());
    const [from, to] = [h0, h0 + 4 * hour];
    await open(`?app=forge&from=${iso(from)}&to=${iso(to)}`);
    await ready("kpis");

    const usage = (await ts.client.usage({ appId: "forge", startTime: from, endTime: to, resolutionHours: 0 })).summary!;
    expect(await kpi("usage-requests")).toBe(String(usage.count));
    expect(await kpi("usage-bytes")).toBe(String(usage.totalSize));
    expect(await kpi("usage-lines")).toBe(String(usage.records));
    expect(usage.count).toBeGreaterThan(0n);

    const stats = await ts.client.stats({ appId: "forge", startTime: BigInt(from), endTime: BigInt(to), resolutionHours: 0, topN: 10 });
    const total = stats.total!;
    expect(total.requests).toBe(40n);
    expect(await kpi("stats-errors")).toBe(String(total.errors));
    expect(await kpi("stats-bytes")).toBe(String(total.bytesSent));
    expect(await kpi("stats-p50")).toBe(String(total.latencyP50));
    expect(await kpi("stats-p99")).toBe(String(total.latencyP99));
    await expect(page.locator('[data-testid="stats-errors"] .sub').textContent()).resolves.toContain(`of ${total.requests} finished`);

    // Each chart is drawn, and the top routes are Stats' own, in its order.
    for (const chart of ["requests", "status", "errors", "latency", "bytes", "lines"]) {
      await page.locator(`[data-testid="chart-${chart}"][data-state="ready"] canvas`).waitFor();
    }
    const routes = await page.locator('[data-testid="top-routes"] tbody tr').evaluateAll((rows) =>
      rows.map((r) => [r.querySelector(".route")!.textContent, r.querySelector(".num")!.textContent]),
    );
    expect(routes).toEqual(stats.topRouteByRequests.map((r) => [r.route, String(r.figures!.requests)]));
  });

  it("keeps the Usage figures and says why when the server does not serve Stats", async () => {
    await ts.write(...seed());
    page = await browser.newPage();
    await page.route("**/reqlog.v1.LogService/Stats", (route) =>
      route.fulfill({ status: 501, contentType: "application/json", body: JSON.stringify({ code: "unimplemented", message: "method Stats is not implemented" }) }),
    );
    pageErrors = [];
    page.on("pageerror", (err) => pageErrors.push(err.message));
    await page.goto(`http://${ts.httpAddress}/?app=forge&from=${iso(h0)}&to=${iso(h0 + 4 * hour)}`);
    await ready("kpis");
    const banner = page.locator('[data-testid="stats-problem"]');
    await expect(banner.textContent()).resolves.toContain("This server does not serve Stats yet: unimplemented method Stats is not implemented");
    const usage = await ts.client.usage({ appId: "forge", startTime: h0, endTime: h0 + 4 * hour, resolutionHours: 0 });
    expect(await kpi("usage-requests")).toBe(String(usage.summary!.count));
    await page.locator('[data-testid="chart-requests"][data-state="ready"] canvas').waitFor();
    await page.locator('[data-testid="chart-latency"][data-state="error"]').waitFor();
  });

  it("lists exactly the requests a regex matches, and keeps the search in the URL", async () => {
    const logs = seed();
    await ts.write(...logs);
    await open("?app=forge&view=requests&range=all");
    await ready("results");
    const regex = '"GET /api/v1/repos/[^/]+/[^/]+/commits';
    await page.locator("#regex").fill(regex);
    await page.locator("form.filters button[type=submit]").click();
    await ready("results");
    const expected = expectedIds(logs, (l) => /^\/api\/v1\/repos\/[^/]+\/[^/]+\/commits/.test(l.resource));
    expect(expected).toHaveLength(20);
    expect(await listed("request-list")).toEqual(expected);
    expect(new URL(page.url()).searchParams.get("regex")).toBe(regex);

    // The URL alone brings the same view back, with the host regex and the level too.
    await page.goto(`http://${ts.httpAddress}/?app=forge&view=requests&range=all&regex=${encodeURIComponent(regex)}&host=%5Eforge%5C.&level=3`);
    await ready("results");
    await expect(page.locator("#regex").inputValue()).resolves.toBe(regex);
    const worse = expectedIds(logs, (l) => /commits/.test(l.resource) && l.host === "forge.example" && l.line.some((x) => x.level >= 3));
    expect(worse).toEqual(["r30", "r20", "r10", "r0"]);
    expect(await listed("request-list")).toEqual(worse);
  });

  it("pages through every request with Read's offsets, older and back newer", async () => {
    const logs = Array.from({ length: 120 }, (_, i) => minimalLog({ requestId: rid(`p${i}`), startTime: usec(h0 + i), endTime: usec(h0 + i) + 5n }));
    await ts.write(...logs);
    await open("?app=forge&view=requests&range=all");
    const pages: string[][] = [];
    for (let n = 0; n < 3; n++) {
      if (n > 0) await page.getByTestId("older").click();
      await ready("results");
      pages.push((await listed("request-list")) as string[]);
    }
    expect(pages.map((p) => p.length)).toEqual([50, 50, 20]);
    expect(pages.flat()).toEqual(expectedIds(logs, () => true));
    await expect(page.getByTestId("older").count()).resolves.toBe(0);
    await page.getByRole("button", { name: "← Newer" }).click();
    await ready("results");
    expect(await listed("request-list")).toEqual(pages[1]);
  });

  it("shows a request's detail with its app lines, also from a shared link", async () => {
    await ts.write(...seed());
    await open("?app=forge&view=requests&range=all");
    await ready("results");
    await page.locator('tr.request[data-request-id="r15"]').click();
    await ready("detail");
    const lines = () => page.locator('[data-testid="app-lines"] tr').evaluateAll((rows) => rows.map((r) => [r.querySelector(".level")!.textContent, r.querySelector(".message")!.textContent]));
    const expected = [
      ["INFO", "listing commits for r15"],
      ["ERROR", "cannot reach object storage (r15)"],
    ];
    expect(await lines()).toEqual(expected);
    await expect(page.locator('[data-testid="detail"] dl').textContent()).resolves.toContain("r15");

    await page.goto(page.url());
    await ready("detail");
    expect(await lines()).toEqual(expected);
  });

  it("shows in the live tail a request written while it follows", async () => {
    await open("?app=forge&view=tail");
    // Tail follows what is written after it started: wait until the server has the stream.
    await expect
      .poll(async () => (await (await fetch(`http://${ts.httpAddress}/metrics`)).text()).match(/^reqlog_tails_open (\d+)$/m)?.[1], { timeout: 10_000 })
      .toBe("1");
    await ts.write(minimalLog({ requestId: rid("tailed"), resource: "/api/v1/repos/alice/app/commits", endTime: usec(h0) + 5n, status: 201 }));
    const row = page.locator('[data-testid="tail-list"] tr.request[data-request-id="tailed"]');
    await row.waitFor({ timeout: 10_000 });
    await expect(row.locator(".resource").textContent()).resolves.toBe("/api/v1/repos/alice/app/commits");
    await expect(row.locator(".status").textContent()).resolves.toBe("201");
  });

  it("shows RE2's own message for an invalid regex", async () => {
    await ts.write(...seed());
    const refusal = await callError(ts.read({ combinedLogRegex: "((" }));
    await open("?app=forge&view=requests&range=all&regex=((");
    const results = page.locator('[data-testid="results"][data-state="error"]');
    await results.waitFor();
    expect(refusal.details).toContain("missing )");
    await expect(results.locator(".message").textContent()).resolves.toBe(refusal.details);
    await expect(results.locator(".code").textContent()).resolves.toBe("invalid_argument");
  });

  it("asks for a token once, in the token panel, rather than with a red box in every panel", async () => {
    await ts.write(...seed());
    await ts.backend.tokens.create({ name: "dashboard", scopes: ["read:logs"] });
    await open(`?app=forge&from=${iso(h0)}&to=${iso(h0 + 4 * hour)}`);
    await page.locator('[data-testid="kpis"][data-state="error"]').waitFor();
    await expect(page.locator(".token-panel .prompt").textContent()).resolves.toContain("This server needs an access token");
    expect(await page.locator(".problem").count()).toBe(0);
    expect(await page.locator('[role="alert"]:visible').count()).toBe(1);
    await expect(page.locator('[data-testid="kpis"]').textContent()).resolves.toContain("needs an access token");
  });

  it("says where the app's newest request is when the range holds none, and shows no latency as such", async () => {
    const imported = minimalLog({ requestId: rid("imported"), startTime: usec(h0 + 3 * hour), endTime: usec(h0 + 3 * hour), resource: "/imported" });
    await ts.write(...seed(), imported);
    await open("?app=forge&view=requests"); // the default range, the last 24 hours: the seed is days older
    const note = page.locator('[data-testid="results"] [data-testid="empty-range"]');
    await note.locator('[data-testid="show-all"]').waitFor();
    await expect(note.textContent()).resolves.toBe(
      "No requests in this range. The newest request of “forge” is from 2026-11-18 15:00:00.000 UTC: show everything stored.",
    );
    await note.locator('[data-testid="show-all"]').click();
    await ready("results");
    const row = page.locator("tr.request", { has: page.locator("td.resource", { hasText: "/imported" }) });
    await expect(row.locator("td.latency").textContent()).resolves.toBe("no latency");
  });

  it("asks for a token on a server with tokens, then sends it as a bearer token from session storage", async () => {
    await ts.write(...seed());
    const { token } = await ts.backend.tokens.create({ name: "dashboard", scopes: ["read:logs"] });
    await open("?app=forge&view=requests&range=all");
    await page.locator('[data-testid="results"][data-state="error"]').waitFor();
    await expect(page.locator('[data-testid="results"] .hint').textContent()).resolves.toContain("needs an access token");
    await page.locator("#token").fill(token);
    await page.getByRole("button", { name: "Use" }).click();
    await ready("results");
    expect(await listed("request-list")).toHaveLength(40);
    await expect(page.evaluate('sessionStorage.getItem("reqlog.token")')).resolves.toBe(token);
    expect(page.url()).not.toContain(token);
  });
});

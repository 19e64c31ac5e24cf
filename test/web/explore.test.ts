import type { Browser, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { readQueryAnswer } from "../../src/client/query-answer.js";
import { launchChromium } from "../helpers/browser.js";
import { minimalLog, rid } from "../helpers/fixtures.js";
import { useTestServer } from "../helpers/test-server.js";

const h0 = 1_795_003_200; // 2026-11-18T12:00:00Z, a whole hour
const usec = (seconds: number) => BigInt(seconds) * 1_000_000n;

/** Thirty forge requests over three hours: artifact downloads refused (401) now and then, slow hooks, fast teams. */
const seed = () =>
  Array.from({ length: 30 }, (_, i) =>
    minimalLog({
      requestId: rid(`e${i}`),
      startTime: usec(h0 + i * 360),
      endTime: usec(h0 + i * 360) + BigInt((i % 3) * 400_000 + 5_000),
      latency: BigInt((i % 3) * 400_000 + 5_000),
      resource: ["/api/v1/repos/alice/app/actions/artifacts/9/zip/raw?expires=1&sig=x", "/api/v1/admin/hooks/3", "/api/v1/teams/7"][i % 3]!,
      status: i % 3 === 0 ? (i % 2 === 0 ? 401 : 200) : i % 3 === 1 ? 500 : 200,
      ip: `10.0.0.${i % 4}`,
    }),
  );

let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
}, 600_000);
afterAll(async () => {
  await browser?.close();
});

describe("the dashboard's Explore view", () => {
  const ts = useTestServer({ http: true, dashboard: true });
  let page: Page;
  let pageErrors: string[] = [];
  const open = async (query: string) => {
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    pageErrors = [];
    page.on("pageerror", (err) => pageErrors.push(err.message));
    await page.goto(`http://${ts.httpAddress}/?view=explore&app=forge${query === "" ? "" : `&q=${encodeURIComponent(query)}`}`);
  };
  const table = () =>
    page.locator('[data-testid="query-table"]').evaluate((t) => [...t.querySelectorAll("tr")].map((r) => [...r.children].map((c) => c.textContent)));

  afterEach(async () => {
    await page?.close();
    expect(pageErrors).toEqual([]);
  });

  it("shows the answer of the query in the link as the API gives it, with a chart for a time series", async () => {
    await ts.write(...seed());
    const query = "* | stats by (_time:1h, status) count() as n";
    await open(query);
    await page.locator('[data-testid="query-results"][data-state="ready"]').waitFor();
    const answer = await readQueryAnswer(ts.client.query({ appId: "forge", query }));
    const iso = (us: number) => new Date(us / 1000).toISOString().replace(".000Z", "Z");
    expect(await table()).toEqual([
      ["_time", "status", "n"],
      ...answer.rows.map(([t, status, n]) => [iso(t as number), String(status), String(n)]),
    ]);
    expect(answer.rows.length).toBeGreaterThan(3);
    await page.locator('[data-testid="query-chart"] canvas').waitFor();
    expect(await page.locator('[data-testid="query-chart"] .u-legend').textContent()).toContain("401");
    expect(await page.locator('[data-testid="query-summary"]').textContent()).toContain(`${answer.rows.length} rows`);
  });

  it("runs a typed query, puts it in the link, and shows no chart for rows that are not a time series, nor for listed requests", async () => {
    await ts.write(...seed());
    await open("");
    await page.locator('[data-testid="query-results"][data-state="empty"]').waitFor();
    await page.fill("#query", '"zip/raw" status:401 | stats by (ip) count() as refused | sort by (refused desc, ip)');
    await page.keyboard.press("Control+Enter");
    await page.locator('[data-testid="query-results"][data-state="ready"]').waitFor();
    expect(await table()).toEqual([
      ["ip", "refused"],
      ["10.0.0.0", "3"],
      ["10.0.0.2", "2"],
    ]);
    expect(new URL(page.url()).searchParams.get("q")).toBe('"zip/raw" status:401 | stats by (ip) count() as refused | sort by (refused desc, ip)');
    expect(await page.locator('[data-testid="query-chart"]').isHidden()).toBe(true);
    // Back to the empty query, as the browser's Back button goes.
    await page.goBack();
    await page.locator('[data-testid="query-results"][data-state="empty"]').waitFor();
    // Requests listed with their times and latencies: a table, not a time series.
    await page.fill("#query", "latency:>100ms | fields _time, resource, latency | sort by (latency desc) | limit 2");
    await page.keyboard.press("Control+Enter");
    await page.locator('[data-testid="query-results"][data-state="ready"]').waitFor();
    expect((await table())[0]).toEqual(["_time", "resource", "latency"]);
    expect(await page.locator('[data-testid="query-chart"]').isHidden()).toBe(true);
  });

  it("shows a refused query's error where it points: the message, the line with the place marked, the place selected", async () => {
    await ts.write(...seed());
    const query = "method:GET AND stauts:500 | stats count()";
    await open(query);
    await page.locator('[data-testid="query-results"][data-state="error"]').waitFor({ state: "attached" });
    expect(await page.locator('[data-testid="query-problem"] .message').textContent()).toBe(
      "line 1, column 16: unknown field 'stauts' (did you mean 'status'?)",
    );
    expect(await page.locator('[data-testid="query-pointer"]').textContent()).toBe(`${query}\n${" ".repeat(15)}^`);
    expect(await page.locator('[data-testid="query-pointer"] mark').textContent()).toBe("s");
    expect(await page.locator("#query").evaluate((box: { selectionStart: number; selectionEnd: number; className: string }) => [box.selectionStart, box.selectionEnd, box.className])).toEqual([
      15,
      16,
      "invalid",
    ]);
  });
});

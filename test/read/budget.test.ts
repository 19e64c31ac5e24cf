import { afterEach, describe, expect, it } from "vitest";
import type { LogReadResponse, RequestLog } from "../../gen/reqlog/v1/log_service_pb.js";
import type { Limits } from "../../src/limits.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

// Each test needs its own budget: it starts its server with those limits.
let ts: TestServer | undefined;
afterEach(async () => {
  await ts?.close();
  ts = undefined;
});

/** A server with these limits, holding `n` finished records r0…r(n-1), r(n-1) the newest. */
async function serverWith(limits: Partial<Limits>, n: number, resource: (i: number) => string): Promise<TestServer> {
  ts = await startTestServer({ limits });
  for (let i = 0; i < n; i += 1000) {
    const logs: RequestLog[] = [];
    for (let j = i; j < Math.min(n, i + 1000); j++) {
      logs.push(minimalLog({ requestId: rid(`r${j}`), endTime: t0 + BigInt(j), resource: resource(j) }));
    }
    await ts.write(...logs);
  }
  return ts;
}

const ids = (r: LogReadResponse) => r.log.map((l) => new TextDecoder().decode(l.requestId));

describe("the scan budget", () => {
  it("returns what it found when the row budget is spent, with an offset that continues exactly", async () => {
    const { read } = await serverWith({ readScanRows: 50 }, 300, (i) => (i % 30 === 0 ? `/match-me/${i}` : `/other/${i}`));
    const first = await read({ count: 20n, combinedLogRegex: "match-me" });
    // Newest first: r299 … r250 are the budget, r270 the only match among
    // them; r249, the first row past it, is checked and ends the page.
    expect(ids(first)).toEqual(["r270"]);
    expect(first.offset).toBeDefined();
    expect(first.lastEndTime).toBe(t0 + 249n);

    const seen = [...ids(first)];
    let offset = first.offset?.requestId;
    let pages = 1;
    while (offset) {
      const page = await read({ count: 20n, combinedLogRegex: "match-me", offset: { requestId: offset } });
      seen.push(...ids(page));
      offset = page.offset?.requestId;
      pages++;
    }
    expect(seen).toEqual(["r270", "r240", "r210", "r180", "r150", "r120", "r90", "r60", "r30", "r0"]);
    expect(pages).toBe(6);
  });

  it("returns the row past the budget when it matches, and goes on after it", async () => {
    const { read } = await serverWith({ readScanRows: 10 }, 100, (i) => `/match-me/${i}`);
    const first = await read({ count: 20n, combinedLogRegex: "match-me" });
    expect(ids(first)).toEqual(Array.from({ length: 11 }, (_, i) => `r${99 - i}`));
    const second = await read({ count: 20n, combinedLogRegex: "match-me", offset: first.offset! });
    expect(ids(second)[0]).toBe("r88");
  });

  it("stops a scan whose filters match nothing (a level no request has) at the budget", async () => {
    const { read } = await serverWith({ readScanRows: 100 }, 1000, (i) => `/r/${i}`);
    const page = await read({ minimumLogLevel: 4, count: 10n });
    expect(page.log).toEqual([]);
    expect(page.offset).toBeDefined();
    expect(page.lastEndTime).toBe(t0 + 899n);
  });

  it("stops a catastrophic pattern over many rows at the time budget", async () => {
    const { read } = await serverWith({ readScanMs: 1, readScanRows: 1_000_000 }, 20_000, (i) => `/${"a".repeat(40)}${i}`);
    const page = await read({ combinedLogRegex: "(a+)+$", count: 10n });
    // RE2 runs in linear time; the time budget ends the scan well before 20,000 rows.
    expect(page.offset).toBeDefined();
    expect(page.lastEndTime).toBeGreaterThan(t0);
  });
});

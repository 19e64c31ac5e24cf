import { beforeEach, describe, expect, it } from "vitest";
import { runCli } from "../../bench/harness/child-server.js";
import { formatLatency, parseStatusClass } from "../../src/cli/stats.js";
import { minimalLog, rid } from "../helpers/fixtures.js";
import { useTestServer } from "../helpers/test-server.js";

const ts = useTestServer();
const h0 = 1_795_003_200n * 1_000_000n; // 2026-11-18T12:00:00Z
const hour = 3_600_000_000n;

beforeEach(async () => {
  const at = (h: bigint, latency: bigint) => ({ startTime: h0 + h * hour, endTime: h0 + h * hour + latency, latency });
  await ts.write(
    // 12:00: 4 team lookups (one fails), 13:00: 2 more; a crawler's hook listing in v2.
    ...[2000n, 4000n, 8000n, 250_000n].map((l, i) =>
      minimalLog({ requestId: rid(`t${i}`), resource: `/api/v1/teams/${i}`, status: i === 3 ? 500 : 200, responseSize: 1000n, ip: "192.0.2.1", userAgent: "git/2.43.0", ...at(0n, l) }),
    ),
    ...[1500n, 900n].map((l, i) =>
      minimalLog({ requestId: rid(`u${i}`), resource: `/api/v1/teams/${i}?x=1`, status: 200, responseSize: 1000n, ip: "192.0.2.2", userAgent: "git/2.43.0", ...at(1n, l) }),
    ),
    minimalLog({ requestId: rid("bot"), versionId: "v2", resource: "/api/v1/admin/hooks", status: 404, ip: "66.249.66.1", userAgent: "Googlebot/2.1", ...at(0n, 30_000n) }),
  );
});

const stats = (...args: string[]) => runCli(["stats", "--server", ts.server.address, "--app", "forge", ...args]);

/** The lines `reqlog stats` prints with these flags, once it has exited 0. */
async function statsLines(...args: string[]): Promise<string[]> {
  const { code, stdout, stderr } = await stats(...args);
  expect([code, stderr]).toEqual([0, ""]);
  return stdout.trimEnd().split("\n");
}

describe("reqlog stats", () => {
  it("prints a row per route and status class for the whole range, the total, and the top lists", async () => {
    expect(await statsLines()).toEqual([
      "bucket (UTC)      route                class  requests  errors  bytes     p50     p90     p99     max",
      "2026-11-18 12:00  /api/v1/admin/hooks  4xx           1       0      0  30.0ms  30.0ms  30.0ms  30.0ms",
      "2026-11-18 12:00  /api/v1/teams/{id}   2xx           5       0  5,000  1.88ms  7.51ms  7.51ms  8.00ms",
      "2026-11-18 12:00  /api/v1/teams/{id}   5xx           1       1  1,000   240ms   240ms   240ms   250ms",
      "total                                                7       1  6,000  3.75ms   240ms   240ms   250ms",
      "(2026-11-18 12:00 to 2026-11-18 14:00 UTC; latency percentiles within one histogram bucket, ~19%)",
      "",
      "top routes by requests:",
      "  6  /api/v1/teams/{id}   p50 1.88ms  p99 240ms   errors 16.7%",
      "  1  /api/v1/admin/hooks  p50 30.0ms  p99 30.0ms  errors 0.0%",
      "",
      "top routes by p99 latency:",
      "  6  /api/v1/teams/{id}   p50 1.88ms  p99 240ms   errors 16.7%",
      "  1  /api/v1/admin/hooks  p50 30.0ms  p99 30.0ms  errors 0.0%",
      "",
      "top client IPs:",
      "  4  192.0.2.1    errors 1",
      "  2  192.0.2.2    errors 0",
      "  1  66.249.66.1  errors 0",
      "",
      "top user agents:",
      "  6  git/2.43.0     errors 1",
      "  1  Googlebot/2.1  errors 0",
    ]);
  });

  it("splits by hour and version, filters status classes and leaves out bots", async () => {
    expect(await statsLines("--resolution", "1", "--per-version", "--status-class", "2xx", "--exclude-bots", "--top", "0")).toEqual([
      "bucket (UTC)      route               class  version     requests  errors  bytes     p50     p90     p99     max",
      "2026-11-18 12:00  /api/v1/teams/{id}  2xx    default/v1         3       0  3,000  3.75ms  7.51ms  7.51ms  8.00ms",
      "2026-11-18 13:00  /api/v1/teams/{id}  2xx    default/v1         2       0  2,000   939µs  1.50ms  1.50ms  1.50ms",
      "total                                                           5       0  5,000  1.88ms  7.51ms  7.51ms  8.00ms",
      "(2026-11-18 12:00 to 2026-11-18 14:00 UTC; latency percentiles within one histogram bucket, ~19%)",
    ]);
  });

  it("prints the reply as JSON", async () => {
    const { stdout } = await stats("--module", "default", "--version", "v2", "--output", "json");
    const reply = JSON.parse(stdout);
    expect(reply.record).toEqual([
      expect.objectContaining({ route: "/api/v1/admin/hooks", statusClass: 4, figures: expect.objectContaining({ requests: "1", latencyMax: "30000" }) }),
    ]);
    // The top lists are of every version.
    expect(reply.topUserAgent).toEqual([
      { name: "git/2.43.0", requests: "6", errors: "1", maxError: "0" },
      { name: "Googlebot/2.1", requests: "1", errors: "0", maxError: "0" },
    ]);
  });

  it("prints a row per hour with each status class's requests (--split none), or per hour and class (--split class)", async () => {
    expect(await statsLines("--resolution", "1", "--split", "none", "--top", "0")).toEqual([
      "bucket (UTC)      requests  errors  bytes     p50     p90     p99     max  1xx  2xx  3xx  4xx  5xx  other",
      "2026-11-18 12:00         5       1  4,000  7.51ms   240ms   240ms   250ms    0    3    0    1    1      0",
      "2026-11-18 13:00         2       0  2,000   939µs  1.50ms  1.50ms  1.50ms    0    2    0    0    0      0",
      "total                    7       1  6,000  3.75ms   240ms   240ms   250ms",
      "(2026-11-18 12:00 to 2026-11-18 14:00 UTC; latency percentiles within one histogram bucket, ~19%)",
    ]);
    expect((await statsLines("--split", "class", "--top", "0")).slice(0, 4)).toEqual([
      "bucket (UTC)      class  requests  errors  bytes     p50     p90     p99     max",
      "2026-11-18 12:00  2xx           5       0  5,000  1.88ms  7.51ms  7.51ms  8.00ms",
      "2026-11-18 12:00  4xx           1       0      0  30.0ms  30.0ms  30.0ms  30.0ms",
      "2026-11-18 12:00  5xx           1       1  1,000   240ms   240ms   240ms   250ms",
    ]);
  });

  it("reports a refused pattern and a malformed status class on stderr", async () => {
    const refused = await stats("--exclude-bots", "(bot");
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^reqlog: exclude_user_agent_regex is not a valid RE2 pattern: /);
    const malformed = await stats("--status-class", "6xx");
    expect(malformed.stderr).toBe('reqlog: --status-class: "6xx" is not one of 1xx … 5xx (or 1 … 5) or other (0)\n');
  });

  it("formats latencies in the unit that reads best and takes status classes in either form", () => {
    expect([0, 850, 1000, 12_345, 999_999, 1_250_000, 75_000_000].map(formatLatency)).toEqual(["0µs", "850µs", "1.00ms", "12.3ms", "1000ms", "1.25s", "75.0s"]);
    expect(["5xx", "2", "other", "0", "4XX"].map(parseStatusClass)).toEqual([5, 2, 0, 0, 4]);
  });
});

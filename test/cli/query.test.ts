import { beforeEach, describe, expect, it } from "vitest";
import { runCli } from "../../bench/harness/child-server.js";
import { minimalLog, rid } from "../helpers/fixtures.js";
import { useTestServer } from "../helpers/test-server.js";

const ts = useTestServer();
const h0 = 1_795_003_200n * 1_000_000n; // 2026-11-18T12:00:00Z
const hour = 3_600_000_000n;

beforeEach(async () => {
  // Webhook admin calls: two 5xx from one client in the first hour, a slow one in the second.
  const at = (h: bigint, ms: bigint) => ({ startTime: h0 + h * hour, endTime: h0 + h * hour + ms * 1000n, latency: ms * 1000n });
  await ts.write(
    minimalLog({ requestId: rid("a"), resource: "/api/v1/admin/hooks/3", status: 500, ip: "203.0.113.9", ...at(0n, 40n) }),
    minimalLog({ requestId: rid("b"), resource: "/api/v1/admin/hooks/4", status: 502, ip: "203.0.113.9", ...at(0n, 2200n) }),
    minimalLog({ requestId: rid("c"), resource: "/api/v1/admin/hooks", status: 200, ip: "10.0.3.7", ...at(1n, 12n) }),
    minimalLog({ requestId: rid("d"), resource: "/api/v1/teams/7", status: 503, ip: "10.0.3.7", ...at(1n, 90n) }),
  );
});

const query = (...args: string[]) => runCli(["query", "--server", ts.server.address, "--app", "forge", ...args]);

describe("reqlog query", () => {
  it("prints the answer as a table: a header, numbers aligned right, durations in µs, _time as RFC 3339", async () => {
    const { code, stdout, stderr } = await query("status:>=500 route:hooks | stats by (ip) count() as errors, max(latency) as slowest");
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    expect(stdout).toBe(["ip           errors  slowest", "203.0.113.9       2  2200000", ""].join("\n"));
    const series = await query("* | stats by (_time:1h) count() as n");
    expect(series.stdout.trimEnd().split("\n")).toEqual(["_time                 n", "2026-11-18T12:00:00Z  2", "2026-11-18T13:00:00Z  2"]);
  });

  it("prints one JSON object per row with --json, named by field or by the as name", async () => {
    const { code, stdout } = await query("--json", "status:>=500 | sort by (latency desc) | fields _time, resource, latency");
    expect(code).toBe(0);
    expect(stdout.trimEnd().split("\n").map((l) => JSON.parse(l))).toEqual([
      { _time: "2026-11-18T12:00:02.2Z", resource: "/api/v1/admin/hooks/4", latency: 2_200_000 },
      { _time: "2026-11-18T13:00:00.09Z", resource: "/api/v1/teams/7", latency: 90_000 },
      { _time: "2026-11-18T12:00:00.04Z", resource: "/api/v1/admin/hooks/3", latency: 40_000 },
    ]);
  });

  it("refuses a bad query with exit code 2, pointing at the place in it", async () => {
    const { code, stdout, stderr } = await query("method:GET AND stauts:500");
    expect({ code, stdout }).toEqual({ code: 2, stdout: "" });
    expect(stderr).toBe(
      ["reqlog: line 1, column 16: unknown field 'stauts' (did you mean 'status'?)", "  method:GET AND stauts:500", "                 ^", ""].join("\n"),
    );
  });
});

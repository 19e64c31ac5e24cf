import { beforeEach, describe, expect, it } from "vitest";
import { runCli } from "../../bench/harness/child-server.js";
import { minimalLog, rid } from "../helpers/fixtures.js";
import { useTestServer } from "../helpers/test-server.js";

const ts = useTestServer();
const h0 = 1_795_003_200n * 1_000_000n; // 2026-11-18T12:00:00Z
const hour = 3_600_000_000n;

beforeEach(async () => {
  const logs = [];
  // v1: 1, 3, 0, 2 requests in four hours; v2: 4 in the third hour.
  for (const [h, n] of [[0, 1], [1, 3], [3, 2]] as const) {
    for (let i = 0; i < n; i++) logs.push(minimalLog({ requestId: rid(`v1-${h}-${i}`), versionId: "v1", startTime: h0 + BigInt(h) * hour, endTime: h0 + BigInt(h) * hour + 10n }));
  }
  for (let i = 0; i < 4; i++) logs.push(minimalLog({ requestId: rid(`v2-${i}`), versionId: "v2", startTime: h0 + 2n * hour, endTime: h0 + 2n * hour + 10n }));
  await ts.write(...logs);
});

const usage = (...args: string[]) => runCli(["usage", "--server", ts.server.address, "--app", "forge", ...args]);

describe("reqlog usage", () => {
  it("prints a table per bucket and version, the total, and a chart per version", async () => {
    const { code, stdout } = await usage();
    expect(code).toBe(0);
    const lines = stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^bucket \(UTC\)\s+version\s+requests\s+bytes\s+lines$/);
    expect(lines[1]).toMatch(/^2026-11-18 12:00\s+v1\s+1\s+[\d,]+\s+0$/);
    expect(lines[2]).toMatch(/^2026-11-18 13:00\s+v1\s+3\s+/);
    expect(lines[3]).toMatch(/^2026-11-18 14:00\s+v2\s+4\s+/);
    expect(lines[4]).toMatch(/^2026-11-18 15:00\s+v1\s+2\s+/);
    expect(lines[5]).toMatch(/^total\s+10\s+[\d,]+\s+0$/);
    expect(lines).toContain("requests per bucket, 2026-11-18 12:00 to 2026-11-18 16:00 UTC:");
    expect(lines).toContain("v1  ▃█▁▆  max 3/bucket");
    expect(lines).toContain("v2  ▁▁█▁  max 4/bucket");
  });

  it("combines versions into wider buckets", async () => {
    const { stdout } = await usage("--combine", "--resolution", "2");
    const lines = stdout.split("\n");
    expect(lines[1]).toMatch(/^2026-11-18 12:00\s+\(all\)\s+4\s+/);
    expect(lines[2]).toMatch(/^2026-11-18 14:00\s+\(all\)\s+6\s+/);
  });

  it("lists versions", async () => {
    expect((await usage("--versions-only")).stdout).toBe("v1\nv2\n");
  });

  it("reports a refused range on stderr", async () => {
    const { code, stderr } = await usage("--since", "2026-11-19T00:00:00Z", "--until", "2026-11-18T00:00:00Z");
    expect(code).toBe(2);
    expect(stderr).toBe("reqlog: start_time (1795046400) is after end_time (1794960000)\n");
  });
});

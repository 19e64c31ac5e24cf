import { spawn } from "node:child_process";
import { create } from "@bufbuild/protobuf";
import { beforeEach, describe, expect, it } from "vitest";
import { LogLineSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { mainScript, runCli } from "../../bench/harness/child-server.js";
import { parseSeverity, parseTime } from "../../src/cli/read.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { useTestServer } from "../helpers/test-server.js";

const ts = useTestServer();
beforeEach(async () => {
  await ts.write(
    minimalLog({ requestId: rid("a"), endTime: t0 + 250_000n, status: 302, ip: "203.0.113.9", resource: "/api/v1/repos/a/b/actions/artifacts/7/zip",
      line: [create(LogLineSchema, { time: t0 + 100_000n, level: 1, logMessage: "redirecting to raw" })] }),
    minimalLog({ requestId: rid("b"), endTime: t0 + 1_050_000n, status: 403, method: "PUT", resource: "/api/v1/user/starred/a/b",
      line: [create(LogLineSchema, { time: t0 + 1_010_000n, level: 3, logMessage: "Stars are disabled." })] }),
  );
});

const read = (...args: string[]) => runCli(["read", "--server", ts.server.address, "--app", "forge", ...args]);

describe("reqlog read", () => {
  it("stops quietly when its reader closes the pipe early, as `reqlog read | head` does", async () => {
    for (let at = 0; at < 3000; at += 1000) {
      await ts.write(...Array.from({ length: 1000 }, (_, i) => minimalLog({ requestId: rid(`many-${at + i}`), endTime: t0 + 2_000_000n + BigInt(at + i), resource: `/api/v1/teams/${at + i}` })));
    }
    const child = spawn(process.execPath, [mainScript, "read", "--server", ts.server.address, "--app", "forge", "--limit", "3000"]);
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.once("data", () => child.stdout.destroy());
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
  });

  it("prints combined lines oldest first with their app lines indented", async () => {
    const { code, stdout } = await read();
    expect(code).toBe(0);
    expect(stdout).toBe(
      '203.0.113.9 - - [18/Nov/2026:11:06:40 +0000] "GET /api/v1/repos/a/b/actions/artifacts/7/zip" 302 0 "-" "-"\n' +
        "\t2026-11-18T11:06:40.100Z INFO redirecting to raw\n" +
        '- - - [18/Nov/2026:11:06:41 +0000] "PUT /api/v1/user/starred/a/b" 403 0 "-" "-"\n' +
        "\t2026-11-18T11:06:41.010Z ERROR Stars are disabled.\n",
    );
  });

  it("filters by severity and prints JSON lines", async () => {
    const { stdout } = await read("--severity", "error", "--output", "json");
    const rows = stdout.trim().split("\n").map((l) => JSON.parse(l));
    expect(rows.map((r) => r.status)).toEqual([403]);
    expect(rows[0].line[0].logMessage).toBe("Stars are disabled.");
  });

  it("prints a table under a header naming its columns", async () => {
    const { stdout } = await read("--output", "table", "--regex", "zip");
    expect(stdout).toBe(
      "time (UTC)                status  method  latency  module:version  resource\n" +
        "2026-11-18T11:06:40.250Z  302     GET       250ms  default:v1  /api/v1/repos/a/b/actions/artifacts/7/zip\n",
    );
  });

  it("prints no latency as - for a request whose writer had none (an access log without $request_time)", async () => {
    await ts.write(minimalLog({ requestId: rid("imported"), startTime: t0 + 5_000_000n, endTime: t0 + 5_000_000n, status: 200, resource: "/imported" }));
    const { stdout } = await read("--output", "table", "--regex", "imported");
    expect(stdout.split("\n")[1]).toBe("2026-11-18T11:06:45.000Z  200     GET           -  default:v1  /imported");
  });

  it("says on stderr, naming --app, when the app has no stored requests (a misspelt app is not silence)", async () => {
    const { code, stdout, stderr } = await runCli(["read", "--server", ts.server.address, "--app", "froge"]);
    expect([code, stdout]).toEqual([0, ""]);
    expect(stderr).toBe('no requests are stored for app "froge": check --app (the app_id your servers write)\n');
  });

  it("says so on stderr when the app's requests match none of the filters, with the newest one's time", async () => {
    const { code, stdout, stderr } = await read("--regex", "no-such-path");
    expect([code, stdout]).toEqual([0, ""]);
    expect(stderr).toBe('no requests of app "forge" match; its newest is from 2026-11-18T11:06:41.050Z\n');
  });

  it("names --token and REQLOG_TOKEN when the server needs a token", async () => {
    const { token } = await ts.backend.tokens.create({ name: "cli", scopes: ["read:logs"] });
    const missing = await read();
    expect([missing.code, missing.stderr]).toEqual([2, "reqlog: this server needs an access token: give one with --token or REQLOG_TOKEN\n"]);
    const wrong = await read("--token", "rql_not-a-token");
    expect(wrong.stderr).toBe("reqlog: invalid or revoked access token: give one with --token or REQLOG_TOKEN\n");
    expect((await read("--token", token, "--output", "json")).code).toBe(0);
  });

  it("pages through offsets up to --limit", async () => {
    const many = Array.from({ length: 1500 }, (_, i) => minimalLog({ requestId: rid(`m${i}`), endTime: t0 + 2_000_000n + BigInt(i) }));
    for (let i = 0; i < many.length; i += 500) {
      await ts.write(...many.slice(i, i + 500));
    }
    const { stdout } = await read("--limit", "1200", "--output", "json", "--no-app-logs");
    const got = stdout.trim().split("\n").map((l) => Buffer.from(JSON.parse(l).requestId, "base64").toString());
    expect(got).toHaveLength(1200);
    expect(got[0]).toBe("m300");
    expect(got[1199]).toBe("m1499");
  });

  it("reports a refused read on stderr with a non-zero exit", async () => {
    const { code, stderr } = await read("--regex", "(");
    expect(code).toBe(2);
    expect(stderr).toBe("reqlog: combined_log_regex is not a valid RE2 pattern: missing ): (\n");
  });

  it("--follow prints a request written after it started, within a second", async () => {
    const child = spawn(process.execPath, [mainScript, "read", "--server", ts.server.address, "--app", "forge", "--follow", "--limit", "1", "--output", "table"]);
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    await new Promise<void>((resolve) => child.stdout.once("data", () => resolve())); // the initial page
    await new Promise((r) => setTimeout(r, 300)); // the tail is opened right after the page
    const written = Date.now();
    await ts.write(minimalLog({ requestId: rid("new"), endTime: t0 + 9_000_000n, method: "DELETE", resource: "/api/v1/admin/hooks/99", status: 404 }));
    while (!out.includes("/api/v1/admin/hooks/99") && Date.now() - written < 5000) await new Promise((r) => setTimeout(r, 10));
    expect(Date.now() - written).toBeLessThan(1000);
    expect(out).toContain("404     DELETE   9000ms  default:v1  /api/v1/admin/hooks/99");
    child.kill("SIGINT");
    expect(await new Promise((r) => child.once("close", r))).toBe(0);
  });
});

describe("read flags", () => {
  it("parses durations back from now and dates", () => {
    expect(parseTime("15m", "--since", 1_800_000_000_000)).toBe(BigInt(1_800_000_000_000 - 900_000) * 1000n);
    expect(parseTime("2026-11-21T10:00:00Z", "--since")).toBe(1_795_255_200_000_000n);
    expect(() => parseTime("yesterday-ish", "--since")).toThrow('--since: "yesterday-ish" is neither a duration');
  });

  it("parses severities by name or number", () => {
    expect(parseSeverity("warning")).toBe(2);
    expect(parseSeverity("CRITICAL")).toBe(4);
    expect(parseSeverity("3")).toBe(3);
    expect(() => parseSeverity("loud")).toThrow('--severity: "loud" is not one of debug, info, warning, error, critical or 0-4');
  });
});

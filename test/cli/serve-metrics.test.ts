import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { afterAll, describe, expect, it } from "vitest";
import { LogLineSchema } from "../../gen/reqlog/v1/log_service_pb.js";
import { mainScript, startChildServer } from "../../bench/harness/child-server.js";
import { packageRoot } from "../../src/package-root.js";
import { minimalLog, rid } from "../helpers/fixtures.js";
import { createTestClient } from "../helpers/test-client.js";

const dir = mkdtempSync(join(tmpdir(), "reqlog-cli-metrics-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function serve(args: string[]) {
  return spawnSync(process.execPath, [mainScript, "serve", "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--db", join(dir, "x.db"), ...args], {
    encoding: "utf8",
    timeout: 30_000,
  });
}

describe("reqlog serve's metrics and alerting flags", () => {
  it("refuses to start on a --log-metrics file it cannot use, naming file:line and the reason", () => {
    const file = join(dir, "bad.json");
    writeFileSync(file, '{\n  "metrics": [\n    {"name": "forge_denied_total", "where": {"status": [401], "message_regex": "denied"}}\n  ]\n}\n');
    const result = serve(["--log-metrics", file]);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain(
      `--log-metrics: ${file}:3: metric forge_denied_total: where.message_regex filters lines, and this metric counts requests ("count": "requests")`,
    );
    const missing = serve(["--log-metrics", join(dir, "none.json")]);
    expect(missing.status).not.toBe(0);
    expect(missing.stderr).toContain(`--log-metrics: cannot read ${join(dir, "none.json")}: ENOENT`);
  });

  it("refuses malformed values of the other flags, naming the flag", () => {
    const cases: [string[], string][] = [
      [["--alertmanager-url", "ftp://am:9093"], '--alertmanager-url: "ftp://am:9093" is not an http or https URL'],
      [["--alertmanager-url", "127.0.0.1 9093"], '--alertmanager-url: "127.0.0.1 9093" is not a URL (e.g. http://127.0.0.1:9093)'],
      [["--alertmanager-poll-interval", "often"], '--alertmanager-poll-interval: "often" is not a duration'],
      [["--request-metrics-apps", "forge,,ci"], '--request-metrics-apps: "forge,,ci" is not a comma-separated list of app ids'],
      [["--metrics-max-series-per-app", "0"], '--metrics-max-series-per-app: "0" is not a whole number ≥ 1'],
    ];
    for (const [args, message] of cases) {
      const result = serve(args);
      expect(result.status, args.join(" ")).not.toBe(0);
      expect(result.stderr).toContain(message);
    }
  });
});

describe("reqlog serve with the example --log-metrics file", () => {
  it("counts the example's metrics from what is written, and no request metrics for a skipped app", async () => {
    const server = await startChildServer([
      "--listen", "127.0.0.1:0", "--db", join(dir, "log-metrics.db"),
      "--log-metrics", join(packageRoot(), "docs", "alerts", "log-metrics.json"),
      "--request-metrics-skip-apps", "ci",
    ]);
    const client = createTestClient({ server: server.address });
    try {
      const now = BigInt(Date.now()) * 1000n;
      const raw = (id: string, status: number, versionId = "v1") =>
        minimalLog({ requestId: rid(id), versionId, endTime: now, status, resource: `/api/v1/repos/alice/app/actions/artifacts/7/zip/raw?sig=${id}` });
      const line = (level: number, message: string) => create(LogLineSchema, { time: now, level, logMessage: message });
      const logs = [
        raw("a", 401),
        raw("b", 401, "v2"),
        raw("c", 200),
        minimalLog({ requestId: rid("d"), endTime: now, status: 502, resource: "/api/v1/teams/3", line: [line(3, "cannot reach object storage")] }),
        minimalLog({ appId: "ci", requestId: rid("e"), endTime: now, status: 401 }),
      ];
      await client.write({ log: logs });
      await client.write({ log: logs }); // sent again: counted once
      const text = await (await fetch(`http://${server.httpAddress}/metrics`)).text();
      const samples = text.split("\n").filter((l) => /^forge_/.test(l));
      expect(samples).toEqual([
        'forge_signed_url_rejections_total{app="forge",version="v1"} 1',
        'forge_signed_url_rejections_total{app="forge",version="v2"} 1',
        'forge_requests_with_errors_total{app="forge",http_route="/api/v1/teams/{id}",status_class="5xx"} 1',
        'forge_storage_error_lines_total{app="forge",version="v1",level="ERROR"} 1',
      ]);
      expect(text).toContain('http_server_request_duration_seconds_count{app="forge",');
      expect(text).not.toContain('http_server_request_duration_seconds_count{app="ci",');
    } finally {
      client.close();
      await server.stop();
    }
  });
});

describe("reqlog serve --no-request-metrics", () => {
  it("leaves the apps' requests out of /metrics and keeps reqlog's own metrics", async () => {
    const server = await startChildServer(["--listen", "127.0.0.1:0", "--db", join(dir, "no-request-metrics.db"), "--no-request-metrics"]);
    const client = createTestClient({ server: server.address });
    try {
      await client.write({ log: [minimalLog({ requestId: rid("a"), endTime: BigInt(Date.now()) * 1000n, status: 200 })] });
      const text = await (await fetch(`http://${server.httpAddress}/metrics`)).text();
      expect(text).toContain("reqlog_records_written_total 1\n");
      expect(text).not.toContain("http_server_request_duration_seconds");
    } finally {
      client.close();
      await server.stop();
    }
  });
});

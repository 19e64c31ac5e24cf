import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { mainScript } from "../../bench/harness/child-server.js";

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

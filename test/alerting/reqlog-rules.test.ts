import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { amtool } from "../helpers/alertmanager.js";
import { promtool } from "../helpers/prometheus.js";

const root = join(import.meta.dirname, "..", "..");
const run = (command: string, args: string[], cwd = root) => {
  const result = spawnSync(command, args, { cwd, encoding: "utf8" });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
};

describe("docs/alerts", () => {
  it("holds a rules file promtool accepts", () => {
    const check = run(promtool(), ["check", "rules", "docs/alerts/reqlog-rules.yml"]);
    expect(check.output).toContain("SUCCESS: 15 rules found");
    expect(check.status).toBe(0);
  });

  it("fires each alert on the series it is about, and not on those it is not (promtool test rules, real windows)", () => {
    const test = run(promtool(), ["test", "rules", "reqlog-rules.promtool.yml"], join(root, "test", "alerting"));
    expect(test.output).toContain("SUCCESS");
    expect(test.status).toBe(0);
  });

  it("holds an example Prometheus config and Alertmanager config their tools accept", () => {
    const prometheus = run(promtool(), ["check", "config", "prometheus.yml"], join(root, "docs", "alerts"));
    expect(prometheus.output).toContain("is valid prometheus config file syntax");
    expect(prometheus.status).toBe(0);
    const alertmanager = run(amtool(), ["check-config", "docs/alerts/alertmanager.yml"]);
    expect(alertmanager.output).toContain("SUCCESS");
    expect(alertmanager.status).toBe(0);
  });
});

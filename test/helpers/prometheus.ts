/**
 * A Prometheus of a test's own: Debian's prometheus (installed with apt-get
 * when missing), run as a plain process on loopback with a config, rules and
 * a data folder of the test's, scraping and evaluating every second. Also
 * promtool, from the same package.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { packageRoot } from "../../src/package-root.js";
import { freePort, startLocalProcess, withDebianPackage } from "./local-process.js";

/** The rules reqlog ships (docs/alerts/reqlog-rules.yml). */
export const rulesFile = join(packageRoot(), "docs", "alerts", "reqlog-rules.yml");

/**
 * The shipped rules with every window, offset and `for` shortened, so that
 * what takes minutes in production takes seconds here (1 s scrapes and
 * evaluations); a duration the table does not know fails the test, so a new
 * rule is shortened on purpose, not by accident.
 */
export function shortenedRules(text = readFileSync(rulesFile, "utf8")): string {
  const windows: Record<string, string> = { "5m": "10s", "10m": "20s", "30m": "20s", "1h": "30s", "2h": "30s", "6h": "60s", "1d": "60s", "3d": "60s" };
  const shorter = (d: string) => {
    const s = windows[d];
    if (s === undefined) throw new Error(`the rules use a window of ${d} that shortenedRules does not know`);
    return s;
  };
  return text
    .replace(/\[(\w+)\]/g, (_, d: string) => `[${shorter(d)}]`)
    .replace(/offset (\w+)/g, (_, d: string) => `offset ${shorter(d)}`)
    .replace(/^(\s+)for: \w+$/gm, "$1for: 0s");
}

/** promtool's path, installing Debian's prometheus when it is missing. */
export function promtool(): string {
  return withDebianPackage("prometheus", () => (existsSync("/usr/bin/promtool") ? "/usr/bin/promtool" : undefined));
}

export interface PrometheusOptions {
  /** HOST:PORT of each /metrics to scrape (job "reqlog"). */
  targets: string[];
  /** Rule files' text, by file name (written beside the config). */
  rules?: Record<string, string>;
  /** Alertmanager's base URL, when alerts are sent. */
  alertmanager?: string;
  /** Scrape and rule intervals (default 1s: TOOLCHAIN.md, round 3). */
  interval?: string;
}

export interface PrometheusServer {
  url: string;
  /** An instant query's result vector (label sets and values). */
  query(promql: string): Promise<{ metric: Record<string, string>; value: number }[]>;
  /** Alerts its rules hold (pending and firing). */
  alerts(): Promise<{ labels: Record<string, string>; state: string }[]>;
  stderr(): string;
  stop(): Promise<void>;
}

/**
 * Runs one of the Prometheus project's servers (their flags alike) on a free
 * loopback port with its config and data in `dir`, and resolves once its
 * /-/ready answers; stopping it removes `dir`.
 */
export async function startPrometheusProject(
  binary: string,
  dir: string,
  args: (listen: string) => string[],
): Promise<{ url: string; stderr(): string; stop(): Promise<void> }> {
  const port = await freePort();
  const server = startLocalProcess(binary, [...args(`127.0.0.1:${port}`), "--log.level=warn"]);
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    await server.stop("SIGTERM");
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (server.exited() || Date.now() > deadline) {
      const why = server.exited() ? "exited at start" : `was not ready on ${url} within 30 s`;
      await stop();
      throw new Error(`${binary} ${why}:\n${server.stderr()}`);
    }
    if (await fetch(`${url}/-/ready`).then((r) => r.ok, () => false)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url, stderr: server.stderr, stop };
}

/** Starts Prometheus on a free loopback port and resolves once it is ready. */
export async function startPrometheus(options: PrometheusOptions): Promise<PrometheusServer> {
  const binary = withDebianPackage("prometheus", () => (existsSync("/usr/bin/prometheus") ? "/usr/bin/prometheus" : undefined));
  const dir = mkdtempSync(join(tmpdir(), "reqlog-prometheus-"));
  const interval = options.interval ?? "1s";
  const ruleFiles = Object.keys(options.rules ?? {});
  for (const [name, text] of Object.entries(options.rules ?? {})) writeFileSync(join(dir, name), text);
  writeFileSync(
    join(dir, "prometheus.yml"),
    [
      "global:",
      `  scrape_interval: ${interval}`,
      `  evaluation_interval: ${interval}`,
      ruleFiles.length > 0 ? `rule_files:\n${ruleFiles.map((f) => `  - ${JSON.stringify(join(dir, f))}`).join("\n")}` : "",
      options.alertmanager
        ? `alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: [${JSON.stringify(new URL(options.alertmanager).host)}]`
        : "",
      "scrape_configs:",
      "  - job_name: reqlog",
      `    static_configs:\n      - targets: [${options.targets.map((t) => JSON.stringify(t)).join(", ")}]`,
      "",
    ].join("\n"),
  );
  const { url, stderr, stop } = await startPrometheusProject(binary, dir, (listen) => [
    `--config.file=${join(dir, "prometheus.yml")}`,
    `--storage.tsdb.path=${join(dir, "data")}`,
    `--web.listen-address=${listen}`,
  ]);
  return {
    url,
    async query(promql) {
      const response = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(promql)}`);
      const body = (await response.json()) as { status: string; error?: string; data: { result: { metric: Record<string, string>; value: [number, string] }[] } };
      if (body.status !== "success") throw new Error(`query ${promql}: ${body.error}`);
      return body.data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
    },
    async alerts() {
      const body = (await (await fetch(`${url}/api/v1/alerts`)).json()) as { data: { alerts: { labels: Record<string, string>; state: string }[] } };
      return body.data.alerts;
    },
    stderr,
    stop,
  };
}

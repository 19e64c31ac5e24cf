/**
 * An Alertmanager of a test's own (Debian's prometheus-alertmanager,
 * installed with apt-get when missing), on loopback with gossip off and a
 * data folder of the test's, delivering every alert to a webhook receiver
 * the test runs; and amtool, from the same package.
 */
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { withDebianPackage } from "./local-process.js";
import { startPrometheusProject } from "./prometheus.js";

/** amtool's path, installing Debian's prometheus-alertmanager when it is missing. */
export function amtool(): string {
  return withDebianPackage("prometheus-alertmanager", () => (existsSync("/usr/bin/amtool") ? "/usr/bin/amtool" : undefined));
}

/** One webhook notification as Alertmanager posts it (its version 4 payload), with when it arrived (ms). */
export interface WebhookNotification {
  receivedAt: number;
  status: "firing" | "resolved";
  receiver: string;
  groupLabels: Record<string, string>;
  commonLabels: Record<string, string>;
  alerts: { status: string; labels: Record<string, string>; annotations: Record<string, string>; startsAt: string; endsAt: string }[];
}

export interface WebhookReceiver {
  url: string;
  notifications: WebhookNotification[];
  /** Resolves with the first notification (already received or to come) that `match` takes. */
  next(match: (n: WebhookNotification) => boolean, timeoutMs?: number): Promise<WebhookNotification>;
  close(): Promise<void>;
}

/** An HTTP server that keeps what Alertmanager's webhook_configs post to it. */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const notifications: WebhookNotification[] = [];
  const waiters = new Set<() => void>();
  const server: Server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => (body += chunk.toString()));
    request.on("end", () => {
      notifications.push({ ...(JSON.parse(body) as Omit<WebhookNotification, "receivedAt">), receivedAt: Date.now() });
      response.end();
      for (const wake of waiters) wake();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/hook`,
    notifications,
    next(match, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = notifications.find(match);
          if (!found) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(found);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no matching webhook notification within ${timeoutMs} ms; received: ${JSON.stringify(notifications)}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

export interface AlertmanagerServer {
  url: string;
  stderr(): string;
  stop(): Promise<void>;
}

/** Starts Alertmanager routing every alert to `webhook` (group_wait 1s) and resolves once it is ready. */
export async function startAlertmanager(options: { webhook: string; groupWait?: string }): Promise<AlertmanagerServer> {
  const binary = withDebianPackage("prometheus-alertmanager", () =>
    existsSync("/usr/bin/prometheus-alertmanager") ? "/usr/bin/prometheus-alertmanager" : undefined,
  );
  const dir = mkdtempSync(join(tmpdir(), "reqlog-alertmanager-"));
  writeFileSync(
    join(dir, "alertmanager.yml"),
    [
      "route:",
      "  receiver: test",
      "  group_by: [alertname, app, http_route]",
      `  group_wait: ${options.groupWait ?? "1s"}`,
      "  group_interval: 1s",
      "  repeat_interval: 1h",
      "receivers:",
      "  - name: test",
      "    webhook_configs:",
      `      - url: ${JSON.stringify(options.webhook)}`,
      "        send_resolved: true",
      "",
    ].join("\n"),
  );
  return startPrometheusProject(binary, dir, (listen) => [
    `--config.file=${join(dir, "alertmanager.yml")}`,
    `--storage.path=${join(dir, "data")}`,
    `--web.listen-address=${listen}`,
    // Empty: no gossip (a cluster of one), so nothing listens beyond the port above.
    "--cluster.listen-address=",
  ]);
}

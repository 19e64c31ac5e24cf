/**
 * An nginx of a test's own: Debian's nginx, installed with apt-get when it
 * is missing (saying so), run as a plain process (no daemon, no service) on
 * loopback with a prefix folder, a config, log formats and access logs of
 * the test's choosing, proxying to an app the test runs (or with a site
 * config of the test's, such as the one the docs show). Never skipped: it
 * is installed, or the start fails with the reason.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, startLocalProcess, withDebianPackage } from "./local-process.js";

export interface NginxOptions {
  /** Where requests go: http://127.0.0.1:PORT of the test's app. */
  upstream: string;
  /** log_format definitions: name → format text (nginx syntax, without quotes). */
  logFormats?: Record<string, string>;
  /** Access logs: file name (in the prefix's logs/ folder) → format name ("combined" is nginx's own). */
  accessLogs: Record<string, string>;
}

export interface NginxServer {
  /** http://127.0.0.1:PORT */
  url: string;
  /** The folder holding its config, logs/ and pid file. */
  prefix: string;
  /** The path of one of its access logs. */
  log(name: string): string;
  /** Tells nginx to reopen its logs (SIGUSR1, what logrotate's postrotate does). */
  reopen(): void;
  /** The text of its error log (for failure messages). */
  errors(): string;
  stop(): Promise<void>;
}

const binary = "/usr/sbin/nginx";

/** Starts nginx in the foreground (master and one worker) and resolves once it answers. */
export async function startNginx(options: NginxOptions): Promise<NginxServer> {
  const port = await freePort();
  return runNginx(port, (prefix) => {
    const formats = Object.entries(options.logFormats ?? {})
      .map(([name, format]) => `  log_format ${name} '${format.replace(/'/g, "\\'")}';`)
      .join("\n");
    const logs = Object.entries(options.accessLogs)
      .map(([file, format]) => `    access_log ${join(prefix, "logs", file)} ${format};`)
      .join("\n");
    return `${formats}
  server {
    listen 127.0.0.1:${port};
    server_name forge.test;
${logs}
    location / {
      proxy_pass ${options.upstream};
      proxy_set_header Host $host;
    }
  }`;
  });
}

/**
 * Starts nginx with `site` as its http block's content (upstreams and
 * servers, e.g. a config the docs show, its addresses put on loopback), and
 * resolves once it answers on `port`, one of the ports the site listens on.
 */
export function startNginxSite(site: string, port: number): Promise<NginxServer> {
  return runNginx(port, () => site);
}

/** Runs nginx with `http(prefix)` in its http block, waiting for `port` to answer. */
async function runNginx(port: number, http: (prefix: string) => string): Promise<NginxServer> {
  const nginx = withDebianPackage("nginx", () => (existsSync(binary) ? binary : undefined));
  const prefix = mkdtempSync(join(tmpdir(), "reqlog-nginx-"));
  for (const dir of ["logs", "tmp"]) mkdirSync(join(prefix, dir));
  // As root, workers would run as nobody; they only proxy here, but keep them as the caller for temp files.
  const user = process.getuid?.() === 0 ? "user root root;" : "";
  writeFileSync(
    join(prefix, "nginx.conf"),
    `${user}
daemon off;
worker_processes 1;
pid ${join(prefix, "nginx.pid")};
error_log ${join(prefix, "logs", "error.log")} warn;
events { worker_connections 256; }
http {
  client_body_temp_path ${join(prefix, "tmp")} 1;
  proxy_temp_path ${join(prefix, "tmp")} 1;
  fastcgi_temp_path ${join(prefix, "tmp")} 1;
  uwsgi_temp_path ${join(prefix, "tmp")} 1;
  scgi_temp_path ${join(prefix, "tmp")} 1;
${http(prefix)}
}
`,
  );
  const server = startLocalProcess(nginx, ["-p", prefix, "-c", join(prefix, "nginx.conf"), "-e", join(prefix, "logs", "error.log")]);
  const errors = () => {
    const file = join(prefix, "logs", "error.log");
    return `${server.stderr()}${existsSync(file) ? readFileSync(file, "utf8") : ""}`;
  };
  const stop = async () => {
    await server.stop("SIGQUIT"); // graceful: finishes requests, flushes logs
    rmSync(prefix, { recursive: true, force: true });
  };
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (server.exited()) {
      const why = errors();
      await stop();
      throw new Error(`nginx exited at start:\n${why}`);
    }
    // A connection without a request: nginx logs nothing for it (a request would be in the access logs).
    const answered = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (answered) break;
    if (Date.now() > deadline) {
      const why = errors();
      await stop();
      throw new Error(`nginx did not answer on ${url} within 15 s:\n${why}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url,
    prefix,
    log: (name) => join(prefix, "logs", name),
    reopen: () => void server.child.kill("SIGUSR1"),
    errors,
    stop,
  };
}

import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RequestLog } from "../../gen/reqlog/v1/log_service_pb.js";
import { mainScript, runCli } from "../../bench/harness/child-server.js";
import { type ForgeApp, type SentRequest, sendMany, startForgeApp } from "../helpers/forge-app.js";
import { type NginxServer, startNginx } from "../helpers/nginx.js";
import { eventually, readAll } from "../helpers/read-all.js";
import { useTestServer } from "../helpers/test-server.js";
import { defaultPrivacy } from "../../src/write/privacy.js";

/** nginx's own `combined`, and a format with the timing, host and request id variables. */
const timedFormat =
  '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" ' +
  "$request_time $upstream_response_time $host $request_id";

let app: ForgeApp;
let nginx: NginxServer;
let sent: SentRequest[];
const total = 300;

const redact = defaultPrivacy.redact;
const linesOf = (file: string) => readFileSync(file, "utf8").split("\n").filter((l) => l !== "");

beforeAll(async () => {
  app = await startForgeApp();
  nginx = await startNginx({
    upstream: app.url,
    logFormats: { timed: timedFormat },
    accessLogs: { "access.log": "combined", "timed.log": "timed" },
  });
  sent = await sendMany(nginx.url, 1, "imp", 0, total);
  // nginx writes a request's line after its response has gone out.
  await eventually(async () => linesOf(nginx.log("access.log")).length === total && linesOf(nginx.log("timed.log")).length === total, "nginx's log lines");
}, 120_000);

afterAll(async () => {
  await nginx?.stop();
  await app?.close();
});

const ts = useTestServer();
const reqlog = (...args: string[]) => runCli(["import", "--server", ts.server.address, "--app", "forge", ...args]);
const pathOfLine = (line: string) => / "[A-Z]+ (\S+) HTTP\/1\.1" /.exec(line)![1]!;

/** The records by resource (every sent path is unique). */
function byResource(records: RequestLog[]): Map<string, RequestLog> {
  const map = new Map<string, RequestLog>();
  for (const r of records) {
    expect(map.has(r.resource), `${r.resource} stored twice`).toBe(false);
    map.set(r.resource, r);
  }
  return map;
}

describe("reqlog import of a real nginx's access logs", () => {
  it("stores every line of nginx's combined log with its fields and its original text", async () => {
    const { code, stdout, stderr } = await reqlog("--no-progress", nginx.log("access.log"));
    expect(stderr).toBe("");
    expect(code).toBe(0);
    expect(stdout).toMatch(new RegExp(`^imported .*access\\.log: 300 lines, 300 records stored, 0 rejected, in [\\d.]+ s \\([\\d,]+ lines/s\\)\\n$`));

    const stored = byResource(await readAll(ts.client, "forge"));
    expect(stored.size).toBe(total);
    const lines = new Map(linesOf(nginx.log("access.log")).map((l) => [pathOfLine(l), l]));
    for (const request of sent) {
      // The forge's signed links are stored with their signatures redacted (docs/privacy.md).
      const record = stored.get(redact.url(request.path))!;
      expect(record, request.path).toBeDefined();
      expect(record.method).toBe(request.method);
      expect(record.status).toBe(request.status);
      expect(record.responseSize).toBe(BigInt(request.bodyBytes));
      expect(record.userAgent, record.combined).toBe(request.userAgent);
      expect(record.referrer).toBe(request.referer ?? "");
      expect(record.ip).toBe("127.0.0.1");
      expect(record.httpVersion).toBe("HTTP/1.1");
      expect(record.versionId).toBe("access-log");
      expect(record.moduleId).toBe("default");
      expect(record.combined).toBe(redact.text(lines.get(request.path)!));
      expect(record.latency).toBe(0n);
      expect(record.endTime).toBe(record.startTime);
      expect(Math.abs(Number(record.endTime / 1000n) - Date.now())).toBeLessThan(120_000);
    }
    const routes = new Set([...stored.values()].map((r) => r.urlMapEntry));
    expect(routes).toEqual(
      new Set([
        "/api/v1/repos/{owner}/{repo}/commits",
        "/api/v1/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/zip",
        "/api/v1/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/zip/raw",
        "/api/v1/user/starred/{owner}/{repo}",
        "/api/v1/admin/hooks/{id}",
        "/api/v1/admin/hooks",
        "/api/v1/teams/{id}/members",
      ]),
    );
    expect(new Set(sent.map((s) => s.status))).toEqual(new Set([200, 201, 302, 401, 403, 404]));
  });

  it("reads a custom log_format: latency from $request_time, host, and $request_id as the request id", async () => {
    const { code, stdout } = await reqlog("--no-progress", "--log-format", timedFormat, "--version", "v7", "--module", "web", nginx.log("timed.log"));
    expect(code).toBe(0);
    expect(stdout).toContain(": 300 lines, 300 records stored, 0 rejected");
    const stored = byResource(await readAll(ts.client, "forge"));
    const lines = new Map(linesOf(nginx.log("timed.log")).map((l) => [pathOfLine(l), l]));
    for (const request of sent) {
      const record = stored.get(redact.url(request.path))!;
      const line = lines.get(request.path)!;
      const [requestTime, upstreamTime, host, requestId] = line.split(" ").slice(-4);
      expect(new TextDecoder().decode(record.requestId)).toBe(requestId);
      expect(requestId).toMatch(/^[0-9a-f]{32}$/);
      expect(record.latency).toBe(BigInt(Math.round(Number(requestTime) * 1e6)));
      expect(record.startTime).toBe(record.endTime - record.latency);
      expect(record.host).toBe(host);
      expect(host).toBe("forge.test");
      // nginx reads the two from its cached millisecond clock at different moments: the upstream's may be 1 ms
      // over. Compared as whole milliseconds (0.010 > 0.009 + 0.001 in floating point).
      const ms = (seconds: string) => Math.round(Number(seconds) * 1000);
      expect(ms(upstreamTime!)).toBeLessThanOrEqual(ms(requestTime!) + 1);
      expect(record.combined).toBe(redact.text(line));
      expect([record.moduleId, record.versionId]).toEqual(["web", "v7"]);
      // The app waits 30 ms; nginx's cached clock may start the request up to 1 ms late (a run logged 0.029).
      if (request.path.includes("delay=30")) expect(record.latency).toBeGreaterThanOrEqual(29_000n);
    }
  });

  it("stores each line once when a log is imported again, also gzipped and from stdin", async () => {
    const log = nginx.log("access.log");
    expect((await reqlog("--no-progress", log)).code).toBe(0);
    const first = await readAll(ts.client, "forge");
    const gz = join(nginx.prefix, "access.log.1.gz");
    writeFileSync(gz, gzipSync(readFileSync(log)));
    const again = await reqlog("--no-progress", gz, log);
    expect(again.stdout).toContain(": 600 lines, 600 records stored, 0 rejected");
    // From stdin too: the same content names the same requests.
    const child = spawn(process.execPath, [mainScript, "import", "--server", ts.server.address, "--app", "forge", "--json", "-"], { stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c));
    child.stdin.end(readFileSync(gz));
    expect(await new Promise((r) => child.once("close", r))).toBe(0);
    expect(JSON.parse(out)).toMatchObject({ files: ["-"], lines: 300, records: 300, rejected: 0, blank: 0, firstRejected: [] });

    const after = await readAll(ts.client, "forge");
    expect(after).toHaveLength(total);
    expect(after.map((r) => new TextDecoder().decode(r.requestId)).sort()).toEqual(first.map((r) => new TextDecoder().decode(r.requestId)).sort());
    const usage = await ts.client.usage({ appId: "forge", resolutionHours: 0 });
    expect(usage.summary?.count).toBe(BigInt(total));
  });
});

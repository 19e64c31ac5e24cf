import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, truncateSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ChildServer, mainScript, startChildServer } from "../../bench/harness/child-server.js";
import { createLogServiceClient, type LogServiceClient } from "../../src/client/log-service-client.js";
import { freePort } from "../helpers/local-process.js";
import { type ForgeApp, type SentRequest, sendMany, startForgeApp } from "../helpers/forge-app.js";
import { type NginxServer, startNginx } from "../helpers/nginx.js";
import { eventually, readAll } from "../helpers/read-all.js";
import { defaultPrivacy } from "../../src/write/privacy.js";

let app: ForgeApp;
let nginx: NginxServer;
let folder: string;

beforeAll(async () => {
  app = await startForgeApp();
  nginx = await startNginx({ upstream: app.url, accessLogs: { "access.log": "combined" } });
  folder = mkdtempSync(join(tmpdir(), "reqlog-ship-test-"));
}, 120_000);

afterAll(async () => {
  await nginx?.stop();
  await app?.close();
  if (folder) rmSync(folder, { recursive: true, force: true });
});

/** `reqlog ship --follow` in a child process, its stderr kept. */
function startShip(server: string, state: string, log: string): { child: ChildProcess; stderr: () => string } {
  const child = spawn(
    process.execPath,
    [mainScript, "ship", "--follow", "--server", server, "--app", "forge", "--state", state, "--poll", "50ms", "--rotate-wait", "1s", log],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let stderr = "";
  child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
  child.stdout!.resume();
  return { child, stderr: () => stderr };
}

const exited = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise<void>((resolve) => child.once("exit", () => resolve()));

describe("reqlog ship --follow behind a real nginx", () => {
  it("loses and doubles no line through rename and copytruncate rotation, kill -9 of itself and a server restart", async () => {
    const port = await freePort();
    const db = join(folder, "reqlog.db");
    const state = join(folder, "ship.state.json");
    const log = nginx.log("access.log");
    const serverArgs = ["--db", db, "--listen", `127.0.0.1:${port}`, "--http-listen", "off"];
    let server: ChildServer = await startChildServer(serverArgs);
    const client: LogServiceClient = createLogServiceClient({ server: server.address });
    const sent: SentRequest[] = [];
    const send = async (from: number, to: number) => sent.push(...(await sendMany(nginx.url, 2, "ship", from, to)));
    const stored = () => readAll(client, "forge");
    const storedCount = async (n: number) => eventually(async () => (await stored()).length >= n, `${n} stored requests`, 30_000);
    /** nginx writes a request's line after answering: wait for the lines of these requests in `file`. */
    const logged = (file: string, from: number, to: number) =>
      eventually(async () => {
        const text = readFileSync(file, "utf8");
        for (let i = from; i < to; i++) if (!text.includes(`t=ship-${i}`)) return false;
        return true;
      }, `requests ${from}..${to - 1} in ${file}`);

    let ship = startShip(server.address, state, log);
    let transcript = "";
    try {
      await send(0, 150);
      await storedCount(150);

      // logrotate's default: rename, nginx writes on to the renamed file until it reopens its logs.
      renameSync(log, `${log}.1`);
      await send(150, 200);
      await logged(`${log}.1`, 150, 200);
      nginx.reopen();
      await eventually(async () => existsSync(log), "nginx's new access.log");
      await send(200, 300);
      await storedCount(300);

      // kill -9 while lines arrive: whatever was sent and not acknowledged is sent again.
      const traffic = send(300, 600);
      await new Promise((r) => setTimeout(r, 150));
      ship.child.kill("SIGKILL");
      await exited(ship.child);
      transcript += ship.stderr();
      await traffic;
      ship = startShip(server.address, state, log);
      await storedCount(600);

      // The server goes away: ship retries with backoff until it is back.
      await server.stop();
      await send(600, 700);
      await logged(log, 600, 700);
      await eventually(async () => ship.stderr().includes("retrying in"), "a retry message");
      server = await startChildServer(serverArgs);
      await storedCount(700);

      // copytruncate while ship is behind (stopped): the unread lines are in the copy.
      ship.child.kill("SIGSTOP");
      await send(700, 800);
      await logged(log, 700, 800);
      writeFileSync(`${log}.2`, readFileSync(log));
      truncateSync(log, 0);
      await send(800, 900);
      ship.child.kill("SIGCONT");
      await storedCount(900);

      // Stopped, then the file is renamed and compressed before ship is back: it resumes from the .gz.
      ship.child.kill("SIGKILL");
      await exited(ship.child);
      transcript += ship.stderr();
      await send(900, 1000);
      await logged(log, 900, 1000);
      renameSync(log, `${log}.3`);
      nginx.reopen();
      await eventually(async () => existsSync(log), "nginx's new access.log");
      writeFileSync(`${log}.3.gz`, gzipSync(readFileSync(`${log}.3`)));
      unlinkSync(`${log}.3`);
      await send(1000, 1050);
      ship = startShip(server.address, state, log);
      await storedCount(1050);
      await new Promise((r) => setTimeout(r, 1500)); // anything doubled would show up by now

      const records = await stored();
      const resources = records.map((r) => r.resource).sort();
      expect(new Set(resources).size).toBe(records.length);
      // The forge's signed links are stored with their signatures redacted (docs/privacy.md).
      expect(resources).toEqual(sent.map((s) => defaultPrivacy.redact.url(s.path)).sort());
      expect(records).toHaveLength(1050);
      const byPath = new Map(records.map((r) => [r.resource, r]));
      for (const request of sent) {
        const record = byPath.get(defaultPrivacy.redact.url(request.path))!;
        expect([record.method, record.status, record.responseSize, record.userAgent]).toEqual([
          request.method,
          request.status,
          BigInt(request.bodyBytes),
          request.userAgent,
        ]);
      }

      // The saved position is the current file's end, and the finished files are forgotten.
      ship.child.kill("SIGTERM");
      await exited(ship.child);
      expect(ship.child.exitCode).toBe(0);
      transcript += ship.stderr();
      const saved = JSON.parse(readFileSync(state, "utf8")) as { files: { path: string; offset: number; line: number }[] };
      expect(saved.files).toEqual([expect.objectContaining({ path: log, offset: readFileSync(log).length, line: 50 })]);
      expect(transcript).toContain(`${log}: rotated (a new file is at the path); reading the old one to its end`);
      expect(transcript).toContain(`${log}: truncated (copytruncate)`);
      expect(transcript).toMatch(new RegExp(`continuing at byte \\d+ of its rotated copy ${log}\\.2\\n`));
      expect(transcript).toMatch(new RegExp(`continuing at byte \\d+ of its rotated copy ${log}\\.3\\.gz\\n`));
    } catch (err) {
      // What ship said is the first thing to look at when this fails.
      throw new Error(`${(err as Error).message}\n--- reqlog ship's stderr:\n${transcript}${ship.stderr()}`, { cause: err });
    } finally {
      if (ship.child.exitCode === null && ship.child.signalCode === null) {
        ship.child.kill("SIGKILL");
        await exited(ship.child);
      }
      client.close();
      await server.stop();
    }
  }, 180_000);
});

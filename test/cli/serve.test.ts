import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { mainScript, startChildServer } from "../../bench/harness/child-server.js";

const dir = mkdtempSync(join(tmpdir(), "reqlog-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [mainScript, ...args], { env: { ...process.env, ...env }, encoding: "utf8" });
}

describe("reqlog serve", () => {
  it("takes its address and database from REQLOG_* variables and stops cleanly on SIGTERM", async () => {
    const db = join(dir, "env.db");
    const server = await startChildServer([], { REQLOG_LISTEN: "127.0.0.1:0", REQLOG_DB: db });
    expect(server.address).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(server.stderr()).toContain(`"db":${JSON.stringify(db)}`);
    server.process.kill("SIGTERM");
    expect(await server.exited).toEqual({ code: 0, signal: null });
    expect(server.stderr()).toContain('"msg":"stopped"');
  });

  it("refuses a non-loopback address without tokens, naming the way out", () => {
    const result = run(["serve", "--listen", "0.0.0.0:0", "--db", join(dir, "x.db")]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("refusing to listen on 0.0.0.0:0: a non-loopback address needs access tokens");
    expect(result.stderr).toContain("--allow-remote-without-auth");
  });

  it("rejects a malformed limit with the flag's name", () => {
    const result = run(["serve", "--max-line-bytes", "lots"]);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain("--max-line-bytes: \"lots\" is not a whole number ≥ 1");
  });

  it("lists every limit in its help", () => {
    const result = run(["serve", "--help"]);
    for (const flag of ["--max-message-bytes", "--max-records-per-write", "--max-lines-per-flush", "--max-line-bytes", "--max-status-bytes"]) {
      expect(result.stdout).toContain(flag);
    }
    expect(result.stdout).toContain("REQLOG_MAX_LINE_BYTES");
  });
});

import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli } from "../../bench/harness/child-server.js";
import { readAll } from "../helpers/read-all.js";
import { useTestServer } from "../helpers/test-server.js";

const ts = useTestServer();
let folder: string;
beforeEach(() => {
  folder = mkdtempSync(join(tmpdir(), "reqlog-ship-cli-"));
});
afterEach(() => rmSync(folder, { recursive: true, force: true }));

const line = (n: number) => `203.0.113.9 - - [18/Nov/2026:11:06:40 +0000] "GET /api/v1/teams/${n} HTTP/1.1" 200 12 "-" "git/2.43.0"\n`;

describe("reqlog ship without --follow (a cron job)", () => {
  it("ships what is there, saves where it stopped, and next time ships only the new lines", async () => {
    const log = join(folder, "access.log");
    const state = join(folder, "state.json");
    writeFileSync(log, line(1) + line(2) + line(3));
    const ship = () => runCli(["ship", "--server", ts.server.address, "--app", "forge", "--state", state, log]);
    const first = await ship();
    expect([first.code, first.stdout]).toEqual([0, `shipped ${log}: 3 lines read, 3 records stored, 0 rejected\n`]);
    expect(first.stderr).toBe(`reqlog ship: shipping ${log} (state: ${state})\n`);
    const saved = JSON.parse(readFileSync(state, "utf8"));
    expect(saved).toEqual({ version: 1, files: [{ path: log, identity: expect.stringMatching(/^[0-9a-f]{16}$/), offset: 3 * line(1).length, line: 3 }] });

    expect((await ship()).stdout).toBe(`shipped ${log}: 0 lines read, 0 records stored, 0 rejected\n`);
    appendFileSync(log, `${line(4)}not a line\n${line(5)}`);
    const third = await ship();
    expect([third.code, third.stdout]).toEqual([1, `shipped ${log}: 3 lines read, 2 records stored, 1 rejected\n`]);
    expect(third.stderr).toContain(`${log}:5: not in the combined or common format: `);
    expect((await readAll(ts.client, "forge")).map((r) => r.resource).sort()).toEqual([1, 2, 3, 4, 5].map((n) => `/api/v1/teams/${n}`).sort());
    expect(JSON.parse(readFileSync(state, "utf8")).files[0]).toMatchObject({ offset: readFileSync(log).length, line: 6 });
  });

  it("refuses a corrupt state file with a clear message instead of sending the file again under other ids", async () => {
    const log = join(folder, "access.log");
    const state = join(folder, "state.json");
    writeFileSync(log, line(1) + line(2));
    const ship = () => runCli(["ship", "--server", ts.server.address, "--app", "forge", "--state", state, log]);
    expect((await ship()).code).toBe(0);
    const saved = JSON.parse(readFileSync(state, "utf8"));
    for (const [offset, shown] of [["abc", '"abc"'], [-50, "-50"], [1.5, "1.5"]] as const) {
      writeFileSync(state, JSON.stringify({ ...saved, files: [{ ...saved.files[0], offset }] }));
      const refused = await ship();
      expect([refused.code, refused.stderr]).toEqual([
        2,
        `reqlog: the state file ${state} is corrupt: files[0].offset is ${shown}, not a byte offset (a whole number ≥ 0); move it away to start over ` +
          "(its files are then read from their start, and the lines sent before are stored once: their ids come from the file and the line's offset)\n",
      ]);
    }
    // Moved away: the file is read again from its start and stored once.
    rmSync(state);
    expect((await ship()).stdout).toBe(`shipped ${log}: 2 lines read, 2 records stored, 0 rejected\n`);
    expect(await readAll(ts.client, "forge")).toHaveLength(2);
  });

  it("rejects a line longer than --max-line-length alone and ships on past it", async () => {
    const log = join(folder, "access.log");
    const state = join(folder, "state.json");
    writeFileSync(log, `${line(1)}${"x".repeat(3_000_000)}\n${line(3)}`);
    const shipped = await runCli(["ship", "--server", ts.server.address, "--app", "forge", "--state", state, log]);
    expect(shipped.code).toBe(1);
    expect(shipped.stderr).toContain(`${log}:2: the line is 3000000 bytes long, over --max-line-length=1048576\n`);
    expect(shipped.stdout).toBe(`shipped ${log}: 3 lines read, 2 records stored, 1 rejected\n`);
    expect(JSON.parse(readFileSync(state, "utf8")).files[0]).toMatchObject({ offset: readFileSync(log).length, line: 3 });
  });

  it("refuses stdin, and a state file another ship holds", async () => {
    const refused = await runCli(["ship", "--app", "forge", "-"]);
    expect([refused.code, refused.stderr]).toEqual([2, "reqlog: ship follows files by their path: for stdin, use reqlog import -\n"]);
    const state = join(folder, "state.json");
    writeFileSync(`${state}.lock`, `${process.pid}\n`); // this test's own process: alive
    const held = await runCli(["ship", "--server", ts.server.address, "--app", "forge", "--state", state, join(folder, "access.log")]);
    expect([held.code, held.stderr]).toEqual([2, `reqlog: the state file ${state} is in use by process ${process.pid} (another reqlog ship)\n`]);
    writeFileSync(`${state}.lock`, "999999999\n"); // a process that is gone: its lock is taken over
    writeFileSync(join(folder, "access.log"), line(1));
    expect((await runCli(["ship", "--server", ts.server.address, "--app", "forge", "--state", state, join(folder, "access.log")])).code).toBe(0);
  });
});

import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mainScript, runCli } from "../../bench/harness/child-server.js";
import { readAll } from "../helpers/read-all.js";
import { useTestServer } from "../helpers/test-server.js";

const ts = useTestServer();
let folder: string;
beforeEach(() => {
  folder = mkdtempSync(join(tmpdir(), "reqlog-import-"));
});
afterEach(() => rmSync(folder, { recursive: true, force: true }));

const importing = (...args: string[]) => runCli(["import", "--server", ts.server.address, "--app", "forge", "--no-progress", ...args]);
const good = (n: number, time = "18/Nov/2026:11:06:40 +0000") => `203.0.113.9 - - [${time}] "GET /api/v1/teams/${n} HTTP/1.1" 200 12 "-" "git/2.43.0"`;

/** A log with good lines among lines that are not access-log lines. */
const malformed = [
  good(7),
  "garbage",
  '203.0.113.9 - - [18/Nov/2026:11:06:40 +0000] "GET /api/v1/teams/8 HTTP/1.1" 200',
  "",
  '203.0.113.9 - - [18/Foo/2026:11:06:40 +0000] "GET /api/v1/teams/9 HTTP/1.1" 200 12 "-" "-"',
  '203.0.113.9 - - [18/Nov/2026:11:06:40 +0000] "GET /api/v1/teams/10 HTTP/1.1" 2x0 12 "-" "-"',
  '203.0.113.9 - - [18/Nov/2026:25:06:40 +0000] "GET /api/v1/teams/11 HTTP/1.1" 200 12 "-" "-"',
  '203.0.113.9 - - 18/Nov/2026:11:06:40 +0000 "GET /api/v1/teams/12 HTTP/1.1" 200 12 "-" "-"',
  `${good(13)} trailing`,
  '203.0.113.9 - - [18/Nov/2026:11:06:41 +0000] "GET /api/v1/teams/14 HTTP/1.1" 200 12',
];

describe("reqlog import of a malformed file", () => {
  it("reports each bad line with its file and line number, writes them to the reject file and exits 1", async () => {
    const log = join(folder, "bad.log");
    writeFileSync(log, `${malformed.join("\n")}\n`);
    const rejects = join(folder, "rejected.log");
    const { code, stdout, stderr } = await importing("--reject-file", rejects, log);
    expect(code).toBe(1);
    expect(stderr).toBe(
      [
        `${log}:2: not in the combined or common format: expected " " at column 8, the line ends`,
        `${log}:3: not in the combined or common format: expected " " at column 80, the line ends`,
        `${log}:5: $time_local "18/Foo/2026:11:06:40 +0000" has no month name such as Nov`,
        `${log}:6: not in the combined or common format: expected $status (a 3-digit status) at column 78, found "2x0 12 \\"-\\" \\"-\\""`,
        `${log}:7: $time_local "18/Nov/2026:25:06:40 +0000" is not a valid time`,
        "",
      ].join("\n"),
    );
    expect(stdout).toMatch(
      new RegExp(`^imported ${log}: 10 lines, 2 records stored, 7 rejected \\(the first 5 are above\\), 1 blank, in [\\d.]+ s \\([\\d,]+ lines/s\\)\\n$`),
    );
    // Every rejected line, as it was, in the reject file: fix them and import it.
    expect(readFileSync(rejects, "utf8")).toBe(`${[2, 3, 5, 6, 7, 8, 9].map((n) => malformed[n - 1]).join("\n")}\n`);
    const stored = await readAll(ts.client, "forge");
    expect(stored.map((r) => r.resource).sort()).toEqual(["/api/v1/teams/14", "/api/v1/teams/7"]);
  });

  it("--json prints one summary with every count and the first rejected lines, nothing else", async () => {
    const log = join(folder, "bad.log");
    writeFileSync(log, malformed.join("\n")); // no final line break: the last line counts all the same
    const { code, stdout, stderr } = await importing("--json", log);
    expect([code, stderr]).toEqual([1, ""]);
    const summary = JSON.parse(stdout);
    expect(summary).toMatchObject({ files: [log], lines: 10, records: 2, rejected: 7, blank: 1 });
    expect(summary.seconds).toBeTypeOf("number");
    expect(summary.firstRejected).toEqual([
      { file: log, line: 2, problem: 'not in the combined or common format: expected " " at column 8, the line ends' },
      { file: log, line: 3, problem: 'not in the combined or common format: expected " " at column 80, the line ends' },
      { file: log, line: 5, problem: '$time_local "18/Foo/2026:11:06:40 +0000" has no month name such as Nov' },
      { file: log, line: 6, problem: 'not in the combined or common format: expected $status (a 3-digit status) at column 78, found "2x0 12 \\"-\\" \\"-\\""' },
      { file: log, line: 7, problem: '$time_local "18/Nov/2026:25:06:40 +0000" is not a valid time' },
    ]);
  });

  it("rejects a line longer than --max-line-length alone, with its file and line, and stores the lines around it", async () => {
    const log = join(folder, "long.log");
    // 10 MB: the parser's regex ran out of stack on it, and the whole import failed with no file:line.
    const long = `203.0.113.9 - - [18/Nov/2026:11:06:40 +0000] "GET /${"a".repeat(10_000_000)} HTTP/1.1" 200 12 "-" "-"`;
    writeFileSync(log, `${good(1)}\n${long}\n${good(3)}\n`);
    const rejects = join(folder, "rejected.log");
    const { code, stdout, stderr } = await importing("--reject-file", rejects, log);
    expect(code).toBe(1);
    expect(stderr).toBe(`${log}:2: the line is ${Buffer.byteLength(long)} bytes long, over --max-line-length=1048576\n`);
    expect(stdout).toMatch(new RegExp(`^imported ${log}: 3 lines, 2 records stored, 1 rejected, in `));
    expect((await readAll(ts.client, "forge")).map((r) => r.resource).sort()).toEqual(["/api/v1/teams/1", "/api/v1/teams/3"]);
    // Not kept, so not in the reject file.
    expect(readFileSync(rejects, "utf8")).toBe("");
    const small = await importing("--max-line-length", "50", log);
    expect(small.stderr).toMatch(new RegExp(`^${log}:1: the line is \\d+ bytes long, over --max-line-length=50\n`));
  });

  it("imports the lines of a truncated gzip up to where it stops, says where, and exits 1", async () => {
    const log = join(folder, "access.log.gz");
    const whole = gzipSync(Buffer.from(`${Array.from({ length: 2000 }, (_, i) => good(i)).join("\n")}\n`));
    writeFileSync(log, whole.subarray(0, Math.floor(whole.length / 2)));
    const { code, stdout, stderr } = await importing("--json", log);
    expect(code).toBe(1);
    expect(stderr).toBe("");
    const summary = JSON.parse(stdout);
    expect(summary.lines).toBeGreaterThan(0);
    expect(summary.lines).toBeLessThan(2000);
    expect(summary.records).toBe(summary.lines);
    expect(summary.stopped).toEqual([
      expect.stringMatching(new RegExp(`^${log}: unexpected end of file after line ${summary.lines} \\(byte \\d+ of its text\\); its [\\d,]+ lines before that are imported, the rest of it is not$`)),
    ]);
    expect((await readAll(ts.client, "forge")).length).toBe(summary.lines);
  });

  it("names trailing text after the last field, in a format given with --format", async () => {
    const log = join(folder, "combined.log");
    writeFileSync(log, `${good(13)} trailing\n`);
    const { code, stderr } = await importing("--format", "combined", log);
    expect(code).toBe(1);
    expect(stderr).toBe(`${log}:1: not in the combined format: unexpected text after the last field at column 101: " trailing"\n`);
  });
});

describe("reqlog import's flags and failures", () => {
  it("refuses a log format without a time or a request, naming what it needs", async () => {
    const log = join(folder, "a.log");
    writeFileSync(log, `${good(1)}\n`);
    const noTime = await importing("--log-format", "$remote_addr $request", log);
    expect(noTime).toMatchObject({ code: 2, stderr: 'reqlog: log format "$remote_addr $request" has no time: it needs $time_local, $time_iso8601 or $msec\n' });
    const noRequest = await importing("--log-format", "$remote_addr [$time_local] $status", log);
    expect(noRequest.stderr).toBe(
      'reqlog: log format "$remote_addr [$time_local] $status" has no request: it needs $request, or $request_method and $request_uri\n',
    );
  });

  it("fails on a missing file before sending anything", async () => {
    const log = join(folder, "a.log");
    writeFileSync(log, `${good(1)}\n`);
    const { code, stderr } = await importing(log, join(folder, "missing.log"));
    expect(code).toBe(2);
    expect(stderr).toBe(`reqlog: cannot read ${join(folder, "missing.log")}: ENOENT: no such file or directory, stat '${join(folder, "missing.log")}'\n`);
    expect(await readAll(ts.client, "forge")).toEqual([]);
  });

  it("stops with the server's message when the server refuses the batch (a token without write access)", async () => {
    const { token } = await ts.backend.tokens.create({ name: "reader", scopes: ["read:logs"] });
    const log = join(folder, "a.log");
    writeFileSync(log, `${good(1)}\n`);
    const { code, stderr } = await importing("--token", token, log);
    expect(code).toBe(2);
    expect(stderr).toMatch(/^reqlog: .*write.*\n$/);
  });

  it("gives up after --retry-for when no server answers", async () => {
    const log = join(folder, "a.log");
    writeFileSync(log, `${good(1)}\n`);
    const { code, stderr } = await runCli(["import", "--server", "127.0.0.1:1", "--app", "forge", "--retry-for", "1s", log]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/retrying in [\d.]+ s\n/);
    expect(stderr).toMatch(/\nreqlog: cannot reach the server for 1 s: .*\n$/);
  });

  it("reads a routes file for url_map_entry", async () => {
    const log = join(folder, "a.log");
    writeFileSync(log, `${good(1).replace("/api/v1/teams/1", "/alice/app/raw/branch/main/README.md")}\n`);
    const routes = join(folder, "routes.txt");
    writeFileSync(routes, "/{owner}/{repo}/raw/branch/{branch}/{path*}\n");
    expect((await importing("--routes", routes, log)).code).toBe(0);
    const [record] = await readAll(ts.client, "forge");
    expect(record!.urlMapEntry).toBe("/{owner}/{repo}/raw/branch/{branch}/{path*}");
  });

  it("shows a progress bar with bytes, lines/s and ETA on a terminal", async () => {
    const log = join(folder, "big.log");
    writeFileSync(log, `${Array.from({ length: 20_000 }, (_, i) => good(i)).join("\n")}\n`);
    // script(1) runs the import on a pseudo-terminal, as a user's shell would.
    const command = [process.execPath, mainScript, "import", "--server", ts.server.address, "--app", "forge", log].map((a) => `'${a}'`).join(" ");
    const child = spawn("script", ["-qfec", command, "/dev/null"], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    expect(await new Promise((r) => child.once("close", r))).toBe(0);
    expect(out).toMatch(/\[=+\] 100% 2\.0 MB\/2\.0 MB \| 20,000 lines, [\d,]+ lines\/s \| ETA 0s/);
    expect(out).toMatch(/imported .*big\.log: 20,000 lines, 20,000 records stored, 0 rejected, in [\d.]+ s/);
  });
});

import { appendFileSync, mkdtempSync, renameSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FollowedChunk, followFile } from "../../src/ingest/file-follower.js";
import { identityOf } from "../../src/ingest/file-identity.js";

let folder: string;
let stop: AbortController;
beforeEach(() => {
  folder = mkdtempSync(join(tmpdir(), "reqlog-follow-"));
  stop = new AbortController();
});
afterEach(() => {
  stop.abort();
  rmSync(folder, { recursive: true, force: true });
});

const lines = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `line ${from + i}\n`).join("");

/** Collects what a follower yields, in the background. */
function follow(path: string, options: { follow?: boolean; known?: Parameters<typeof followFile>[0]["known"] } = {}) {
  const got: FollowedChunk[] = [];
  const notices: string[] = [];
  const done = (async () => {
    for await (const chunk of followFile({
      path,
      known: options.known ?? [],
      follow: options.follow ?? true,
      maxLines: 3,
      pollMs: 10,
      rotateWaitMs: 200,
      signal: stop.signal,
      notice: (m) => notices.push(m),
    })) {
      got.push(chunk);
    }
  })();
  const text = () => got.flatMap((c) => c.lines);
  const until = async (n: number) => {
    const deadline = Date.now() + 5000;
    while (text().length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    return text();
  };
  return { got, notices, done, text, until };
}

describe("following a log file", () => {
  it("takes only complete lines, and a line once its end is written", async () => {
    const path = join(folder, "access.log");
    writeFileSync(path, "line 0\nline 1\nline 2 is being wri");
    const f = follow(path);
    expect(await f.until(2)).toEqual(["line 0", "line 1"]);
    await new Promise((r) => setTimeout(r, 100));
    expect(f.text()).toEqual(["line 0", "line 1"]);
    appendFileSync(path, "tten\n");
    expect(await f.until(3)).toEqual(["line 0", "line 1", "line 2 is being written"]);
    expect(f.got.at(-1)).toMatchObject({ starts: [14], firstLine: 3, end: 38, done: false, path, file: path });
  });

  it("reads a renamed file to its end while reading the new one, then says it is done", async () => {
    const path = join(folder, "access.log");
    writeFileSync(path, lines(0, 4));
    const f = follow(path);
    await f.until(4);
    const oldIdentity = f.got[0]!.identity;
    renameSync(path, `${path}.1`);
    appendFileSync(`${path}.1`, lines(4, 6)); // the writer has not reopened yet
    writeFileSync(path, lines(100, 102));
    appendFileSync(`${path}.1`, lines(6, 7));
    const all = await f.until(9);
    expect([...all].sort()).toEqual([...lines(0, 7).split("\n").slice(0, -1), "line 100", "line 101"].sort());
    const deadline = Date.now() + 3000;
    while (!f.got.some((c) => c.done) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(f.got.filter((c) => c.done)).toEqual([expect.objectContaining({ identity: oldIdentity, lines: [], done: true })]);
    expect(f.notices).toEqual([`${path}: rotated (a new file is at the path); reading the old one to its end`]);
  });

  it("resumes a saved position, and says so when a truncated file's unread lines are nowhere to be found", async () => {
    const path = join(folder, "access.log");
    writeFileSync(path, lines(0, 5));
    const identity = identityOf(Buffer.from(lines(0, 1)), false)!;
    const f = follow(path, { known: [{ path, identity, offset: Buffer.byteLength(lines(0, 3)), line: 3 }] });
    expect(await f.until(2)).toEqual(["line 3", "line 4"]);
    expect(f.got[0]!.firstLine).toBe(4);
    truncateSync(path, 0);
    writeFileSync(path, lines(50, 51));
    expect(await f.until(3)).toEqual(["line 3", "line 4", "line 50"]);
    expect(f.notices).toEqual([
      `${path}: truncated (copytruncate)`,
      `${path}: the file was truncated or replaced and no rotated copy of it starts as it did; lines after byte 35 of it that were not read are lost`,
    ]);
  });

  it("without --follow reads what is there and ends", async () => {
    const path = join(folder, "access.log");
    writeFileSync(path, `${lines(0, 7)}partial`);
    const f = follow(path, { follow: false });
    await f.done;
    expect(f.text()).toEqual(lines(0, 7).split("\n").slice(0, -1));
    expect(f.got.map((c) => c.lines.length)).toEqual([3, 3, 1]);
  });
});

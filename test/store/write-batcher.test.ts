import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultLimits } from "../../src/limits.js";
import { openSqliteBackend, type SqliteBackend } from "../../src/store/sqlite/sqlite-backend.js";
import { createWriteBatcher, heavyWeight, requestKey, type WriteBatcher } from "../../src/store/sqlite/write/write-batcher.js";
import { prepareRequestLog } from "../../src/write/prepare-request-log.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";

const signal = new AbortController().signal;

describe("the group commit's queues (write-batcher.ts)", () => {
  let db: Database.Database;
  let batcher: WriteBatcher;
  /** The writes in the order they ran, and the order their callers were answered. */
  let ran: string[];
  let answered: string[];

  beforeEach(() => {
    db = new Database(":memory:");
    db.exec("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)");
    batcher = createWriteBatcher(db);
    ran = [];
    answered = [];
  });
  afterEach(() => db.close());

  /** A write named `name` that stores `value` for each of the requests `keys` (of app "forge"). */
  const write = (name: string, keys: string[], value: string, weight: number) =>
    batcher
      .run(
        () => {
          ran.push(name);
          for (const k of keys) db.prepare("INSERT INTO t (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v").run(k, value);
        },
        signal,
        { weight, requests: () => keys.map((k) => requestKey("forge", rid(k))) },
      )
      .then(() => void answered.push(name));
  const heavyKeys = (prefix: string) => Array.from({ length: heavyWeight }, (_, i) => `${prefix}${i}`);
  const valueOf = (k: string) => (db.prepare("SELECT v FROM t WHERE k = ?").pluck().get(k) as string | undefined) ?? null;

  it("lets a light write overtake a queue of heavy ones, which commit one group a turn", async () => {
    const all = [
      write("heavy 1", heavyKeys("a"), "1", heavyWeight * 8),
      write("heavy 2", heavyKeys("b"), "2", heavyWeight * 8),
      write("heavy 3", heavyKeys("c"), "3", heavyWeight * 8),
      write("light", ["x"], "4", 1),
    ];
    await Promise.all(all);
    expect(ran).toEqual(["light", "heavy 1", "heavy 2", "heavy 3"]);
    expect(answered).toEqual(["light", "heavy 1", "heavy 2", "heavy 3"]);
    expect([valueOf("a0"), valueOf("b0"), valueOf("c0"), valueOf("x")]).toEqual(["1", "2", "3", "4"]);
  });

  it("keeps a light write of a request behind the queued heavy write that names it, so the later version stays", async () => {
    const keys = [...heavyKeys("a"), "r"];
    const all = [
      write("heavy 1", keys, "old", keys.length),
      write("heavy 2", heavyKeys("b"), "2", heavyWeight),
      write("light r", ["r"], "new", 1),
      write("light x", ["x"], "x", 1),
    ];
    await Promise.all(all);
    // The light write of another request goes first; the one of `r` only after the heavy write of `r`.
    expect(ran.indexOf("light x")).toBe(0);
    expect(ran.indexOf("light r")).toBeGreaterThan(ran.indexOf("heavy 1"));
    expect(valueOf("r")).toBe("new");
    expect(valueOf("a0")).toBe("old");
  });

  it("keeps a light write behind a light write it follows that waits behind a heavy one", async () => {
    const all = [
      write("heavy", [...heavyKeys("a"), "r"], "heavy", heavyWeight + 1),
      write("light r", ["r", "s"], "first", 1),
      write("light s", ["s"], "second", 1),
    ];
    await Promise.all(all);
    expect(ran).toEqual(["heavy", "light r", "light s"]);
    expect([valueOf("r"), valueOf("s")]).toEqual(["first", "second"]);
  });

  it("commits a heavy write after a light write of the same request queued before it", async () => {
    const all = [write("light r", ["r"], "old", 1), write("heavy", [...heavyKeys("a"), "r"], "new", heavyWeight + 1)];
    await Promise.all(all);
    expect(ran).toEqual(["light r", "heavy"]);
    expect(valueOf("r")).toBe("new");
  });

  it("keeps a write that may name any request behind the queued heavy writes, and the light writes after it", async () => {
    const all = [
      write("heavy", heavyKeys("a"), "1", heavyWeight),
      write("light x", ["x"], "x", 1),
      batcher.run(() => void ran.push("any"), signal).then(() => void answered.push("any")),
      write("light y", ["y"], "y", 1),
    ];
    await Promise.all(all);
    expect(ran).toEqual(["light x", "heavy", "any", "light y"]);
  });

  it("answers the callers of light writes before the next heavy group runs", async () => {
    const first = write("heavy 1", heavyKeys("a"), "1", heavyWeight * 8);
    const second = write("heavy 2", heavyKeys("b"), "2", heavyWeight * 8);
    // Queued while the first heavy group commits: answered before the second one starts.
    const light = first.then(() => write("light", ["x"], "x", 1));
    let ranAtLightAnswer: string[] = [];
    await Promise.all([first, second, light.then(() => (ranAtLightAnswer = [...ran]))]);
    expect(ranAtLightAnswer).toEqual(["heavy 1", "light"]);
    expect(ran).toEqual(["heavy 1", "light", "heavy 2"]);
  });

  it("commits what is queued, in the same order, when drained", () => {
    void write("heavy", [...heavyKeys("a"), "r"], "old", heavyWeight + 1);
    void write("light r", ["r"], "new", 1);
    void write("light x", ["x"], "x", 1);
    batcher.drain();
    expect(ran).toEqual(["light x", "heavy", "light r"]);
    expect(valueOf("r")).toBe("new");
  });
});

describe("a request written in a light write while a heavy batch naming it is queued (SQLite store)", () => {
  let folder: string;
  let backend: SqliteBackend;

  beforeEach(() => {
    folder = mkdtempSync(join(tmpdir(), "reqlog-batcher-"));
    backend = openSqliteBackend({ path: join(folder, "reqlog.db"), readWorkers: 0 });
  });
  afterEach(async () => {
    await backend.close();
    rmSync(folder, { recursive: true, force: true });
  });

  const record = (id: string, status: number, finished: boolean) =>
    prepareRequestLog(
      minimalLog({ requestId: rid(id), status, startTime: t0, endTime: finished ? t0 + 10n : 0n, finished }),
      defaultLimits,
      "log",
    );

  it("ends with the later version, and a light write of another request goes first", async () => {
    const answered: string[] = [];
    const batch = [...Array.from({ length: heavyWeight }, (_, i) => record(`bulk-${i}`, 200, true)), record("r", 0, false)];
    await Promise.all([
      backend.store.ingest(batch, [], signal).then(() => answered.push("ingest")),
      backend.store.write([record("r", 503, true)], signal).then(() => answered.push("write r")),
      backend.store.write([record("other", 201, true)], signal).then(() => answered.push("write other")),
    ]);
    expect(answered).toEqual(["write other", "ingest", "write r"]);
    const [stored] = await backend.store.getRequests("forge", [rid("r")], signal);
    expect(stored?.status).toBe(503);
    expect(stored?.finished).toBe(true);
  });
});

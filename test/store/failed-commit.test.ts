import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { defaultLimits } from "../../src/limits.js";
import type { SqliteBackend } from "../../src/store/sqlite/sqlite-backend.js";
import { currentSeqSql, searchIndexedSql } from "../../src/store/sqlite/rows/sql.js";
import { prepareRequestLog } from "../../src/write/prepare-request-log.js";
import { minimalLog, regexReadPlan, rid, t0 } from "../helpers/fixtures.js";
import { useSqliteFiles } from "../helpers/sqlite-files.js";

const signal = new AbortController().signal;
const files = useSqliteFiles();

const record = (id: string, resource: string) =>
  prepareRequestLog(minimalLog({ requestId: rid(id), resource, startTime: t0, endTime: t0 + 10n }), defaultLimits, "log");

/**
 * Makes the COMMIT of every group that inserts a request fail, as a full
 * disk or an I/O error can when the WAL is written: a deferred constraint,
 * checked only at COMMIT, that the insert breaks. Returns what lifts it.
 */
function failCommits(backend: SqliteBackend): () => void {
  const db = backend.db;
  db.pragma("foreign_keys = ON");
  db.exec(`CREATE TEMP TABLE commit_gate (id INTEGER PRIMARY KEY);
    CREATE TEMP TABLE commit_blocker (gate INTEGER REFERENCES commit_gate (id) DEFERRABLE INITIALLY DEFERRED);
    CREATE TEMP TRIGGER block_commit AFTER INSERT ON main.requests BEGIN INSERT INTO commit_blocker VALUES (1); END;`);
  return () => {
    db.exec("DROP TRIGGER temp.block_commit; DROP TABLE temp.commit_blocker; DROP TABLE temp.commit_gate;");
    db.pragma("foreign_keys = OFF");
  };
}

describe("a group whose COMMIT fails", () => {
  // The change log kept the failed group's sequence number as saved: a
  // later group that took no new number (the search catch-up) left meta's
  // seq behind the index's mark, and after a restart new rows took ids at
  // or below the mark, never indexed: a regex Read did not find them.
  it("leaves no row id at or below the search index's mark unindexed after a restart", async () => {
    const path = join(files.folder("reqlog-failed-commit-"), "reqlog.db");
    const backend = files.open({ path, readWorkers: 0, searchIndex: "always" });
    await backend.store.write([record("a", "/api/v1/first/alpha")], signal);

    const lift = failCommits(backend);
    await expect(backend.store.write([record("b", "/api/v1/lost/bravo")], signal)).rejects.toThrow("internal storage error");
    lift();
    expect(await backend.store.getRequests("forge", [rid("b")], signal)).toEqual([]);
    // The catch-up a commit armed (writes paused) indexes up to the last number given out.
    const seq = () => BigInt(backend.db.prepare(currentSeqSql).pluck().get() as number);
    const mark = () => BigInt(backend.db.prepare(`SELECT ${searchIndexedSql}`).pluck().get() as number);
    for (let waited = 0; mark() < 2n && waited < 30_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
    expect(mark()).toBe(2n);
    expect(seq()).toBeGreaterThanOrEqual(mark());
    await files.close(backend);

    const reopened = files.open({ path, readWorkers: 0, searchIndex: "always" });
    await reopened.store.write([record("c", "/api/v1/after/charlie")], signal);
    const found = await reopened.store.read(regexReadPlan("charlie"), signal);
    expect(found.records.map((r) => new TextDecoder().decode(r.log.requestId))).toEqual(["c"]);
  });
});

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultLimits } from "../../src/limits.js";
import { searchIndexedSql } from "../../src/store/sqlite/rows/sql.js";
import { openSqliteBackend, type SqliteBackend } from "../../src/store/sqlite/sqlite-backend.js";
import { prepareRequestLog } from "../../src/write/prepare-request-log.js";
import { minimalLog, regexReadPlan, rid, t0 } from "../helpers/fixtures.js";

const signal = new AbortController().signal;

const record = (i: number, resource: string) =>
  prepareRequestLog(minimalLog({ appId: "forge", requestId: rid(`r${i}`), resource, startTime: t0 + BigInt(i), endTime: t0 + BigInt(i) + 10n }), defaultLimits, "log");

const mark = (backend: SqliteBackend) => backend.db.prepare(`SELECT ${searchIndexedSql}`).pluck().safeIntegers(true).get() as bigint;
const maxId = (backend: SqliteBackend) => backend.db.prepare("SELECT max(id) FROM requests").pluck().safeIntegers(true).get() as bigint;

describe("search documents made in bulk (search-doc.ts catchUp)", () => {
  let folder: string;
  let path: string;
  let backend: SqliteBackend;

  beforeEach(() => {
    folder = mkdtempSync(join(tmpdir(), "reqlog-catch-up-"));
    path = join(folder, "reqlog.db");
  });
  afterEach(async () => {
    await backend.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it("finds records written since the index last caught up, before and after a restart, and indexes them later", async () => {
    backend = openSqliteBackend({ path, readWorkers: 0, searchIndex: "always", searchCatchUp: 1_000 });
    await backend.store.write([record(1, "/api/v1/repos/alice/app/raw/go.mod"), record(2, "/api/v1/repos/bob/app")], signal);
    const found = async () => (await backend.store.read(regexReadPlan("alice/app/raw/go\\.mod"), signal)).records.map((r) => r.log.resource);
    expect(mark(backend)).toBeLessThan(maxId(backend));
    expect(await found()).toEqual(["/api/v1/repos/alice/app/raw/go.mod"]);

    await backend.close();
    backend = openSqliteBackend({ path, readWorkers: 0, searchIndex: "always", searchCatchUp: 1 });
    expect(await found()).toEqual(["/api/v1/repos/alice/app/raw/go.mod"]);
    // The next group commit finds one row or more behind: catch-ups of their own (one row id each here) index
    // them all, the rows of before the restart too.
    await backend.store.write([record(3, "/api/v1/repos/carol/app")], signal);
    while (mark(backend) < maxId(backend)) await new Promise((r) => setImmediate(r));
    expect(await found()).toEqual(["/api/v1/repos/alice/app/raw/go.mod"]);
  });

  it("indexes the rows left behind once writes pause", async () => {
    backend = openSqliteBackend({ path, readWorkers: 0, searchCatchUp: 1_000 });
    await backend.store.write([record(1, "/api/v1/repos/alice/app/raw/go.mod")], signal);
    expect(mark(backend)).toBeLessThan(maxId(backend));
    // No more writes: a group of its own indexes them within a second or so.
    while (mark(backend) < maxId(backend)) await new Promise((r) => setTimeout(r, 50));
    expect(mark(backend)).toBe(maxId(backend));
  });
});

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteBackend, type SqliteBackend } from "../../src/store/sqlite/sqlite-backend.js";
import { describeStoreContract, reopenable } from "./contract.js";

let faults = 0;

/**
 * A fault inside the store's transaction: a trigger of the writer's
 * connection only (TEMP) that aborts any insert or update of the request's
 * row; the write's earlier statements have run, as they would before a real
 * fault (a full disk, an I/O error) struck.
 */
function failWritesOf(backend: SqliteBackend, requestId: Uint8Array): () => void {
  const id = Buffer.from(requestId).toString("hex");
  const names = ["insert", "update"].map((event) => {
    const name = `fault_${faults++}`;
    backend.db.exec(`CREATE TEMP TRIGGER ${name} BEFORE ${event.toUpperCase()} ON main.requests
      WHEN NEW.request_id = X'${id}' BEGIN SELECT RAISE(ABORT, 'injected fault'); END`);
    return name;
  });
  return () => {
    for (const name of names) backend.db.exec(`DROP TRIGGER ${name}`);
  };
}

// A database file in a folder of its own, with read workers, as `reqlog serve` runs it.
describeStoreContract("SQLite (file, 2 read workers)", async (now, requestLines) => {
  const folder = mkdtempSync(join(tmpdir(), "reqlog-contract-"));
  return reopenable(
    () => openSqliteBackend({ path: join(folder, "reqlog.db"), readWorkers: 2, now, requestLines }),
    () => rmSync(folder, { recursive: true, force: true }),
    failWritesOf,
  );
});

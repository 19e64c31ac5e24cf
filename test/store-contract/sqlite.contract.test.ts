import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteBackend, type SqliteBackend } from "../../src/store/sqlite/sqlite-backend.js";
import { describeStoreContract } from "./contract.js";

// A database file in a folder of its own, with read workers, as `reqlog serve` runs it.
describeStoreContract("SQLite (file, 2 read workers)", async (now) => {
  const folder = mkdtempSync(join(tmpdir(), "reqlog-contract-"));
  const open = () => openSqliteBackend({ path: join(folder, "reqlog.db"), readWorkers: 2, now });
  let backend: SqliteBackend = open();
  return {
    get backend() {
      return backend;
    },
    async reopen() {
      await backend.close();
      backend = open();
    },
    async cleanup() {
      await backend.close();
      rmSync(folder, { recursive: true, force: true });
    },
  };
});

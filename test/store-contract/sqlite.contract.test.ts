import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteBackend } from "../../src/store/sqlite/sqlite-backend.js";
import { describeStoreContract, reopenable } from "./contract.js";

// A database file in a folder of its own, with read workers, as `reqlog serve` runs it.
describeStoreContract("SQLite (file, 2 read workers)", async (now, requestLines) => {
  const folder = mkdtempSync(join(tmpdir(), "reqlog-contract-"));
  return reopenable(
    () => openSqliteBackend({ path: join(folder, "reqlog.db"), readWorkers: 2, now, requestLines }),
    () => rmSync(folder, { recursive: true, force: true }),
  );
});

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach } from "vitest";
import { openSqliteBackend, type SqliteBackend, type SqliteBackendOptions } from "../../src/store/sqlite/sqlite-backend.js";

/**
 * SQLite files of a test file's own: folders under the temp folder and the
 * backends opened on them, all closed and removed after each test.
 */
export function useSqliteFiles() {
  const folders: string[] = [];
  const backends: SqliteBackend[] = [];
  afterEach(async () => {
    for (const b of backends.splice(0)) await b.close();
    for (const f of folders.splice(0)) rmSync(f, { recursive: true, force: true });
  });
  return {
    /** A new empty folder. */
    folder(prefix: string): string {
      return this.keep(mkdtempSync(join(tmpdir(), prefix)));
    },
    /** A folder made elsewhere, to remove after the test too. */
    keep(folder: string): string {
      folders.push(folder);
      return folder;
    },
    /** A backend, closed after the test unless `close` closes it first. */
    open(options: SqliteBackendOptions): SqliteBackend {
      const backend = openSqliteBackend(options);
      backends.push(backend);
      return backend;
    },
    async close(backend: SqliteBackend): Promise<void> {
      const at = backends.indexOf(backend);
      if (at >= 0) backends.splice(at, 1);
      await backend.close();
    },
  };
}

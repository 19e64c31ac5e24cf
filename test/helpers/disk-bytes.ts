import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

/** Every file under `path` (or `path` itself, a file). */
function filesUnder(path: string): string[] {
  if (!existsSync(path)) return [];
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));
}

/**
 * Which of `needles` are stored anywhere in the files at `paths` (a SQLite
 * database with its -wal and -shm, or a ClickHouse data folder), searched
 * byte for byte as UTF-8: `needle → files holding it`, for the needles found.
 */
export function bytesOnDisk(paths: readonly string[], needles: readonly string[]): Record<string, string[]> {
  const found: Record<string, string[]> = {};
  for (const file of paths.flatMap(filesUnder)) {
    const bytes = readFileSync(file);
    for (const needle of needles) {
      if (bytes.includes(Buffer.from(needle, "utf8"))) (found[needle] ??= []).push(file);
    }
  }
  return found;
}

/** A SQLite database file with its write-ahead log and shared-memory index. */
export const sqliteFiles = (db: string) => [db, `${db}-wal`, `${db}-shm`];

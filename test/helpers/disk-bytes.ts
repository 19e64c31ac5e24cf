import { type Dirent, existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

/** Whether `err` says a file is gone (ClickHouse removes parts it merged while a search walks its folder). */
const gone = (err: unknown) => (err as NodeJS.ErrnoException).code === "ENOENT";

/** Every file under `path` (or `path` itself, a file), skipping folders that go while it walks. */
function filesUnder(path: string): string[] {
  if (!existsSync(path)) return [];
  if (!statSync(path).isDirectory()) return [path];
  let entries: Dirent[];
  try {
    entries = readdirSync(path, { withFileTypes: true });
  } catch (err) {
    if (gone(err)) return [];
    throw err;
  }
  return entries.flatMap((e) => (e.isDirectory() ? filesUnder(join(path, e.name)) : e.isFile() ? [join(path, e.name)] : []));
}

/** A file's bytes, or none when it went since it was listed. */
function bytesOf(file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    if (gone(err)) return Buffer.alloc(0);
    throw err;
  }
}

/**
 * Which of `needles` are stored anywhere in the files at `paths` (a SQLite
 * database with its -wal and -shm, or a ClickHouse data folder), searched
 * byte for byte as UTF-8: `needle → files holding it`, for the needles found.
 * (A live ClickHouse folder changes while it is read: a part merged away meanwhile is skipped.)
 */
export function bytesOnDisk(paths: readonly string[], needles: readonly string[]): Record<string, string[]> {
  const found: Record<string, string[]> = {};
  for (const file of paths.flatMap(filesUnder)) {
    const bytes = bytesOf(file);
    for (const needle of needles) {
      if (bytes.includes(Buffer.from(needle, "utf8"))) (found[needle] ??= []).push(file);
    }
  }
  return found;
}

/** A SQLite database file with its write-ahead log and shared-memory index. */
export const sqliteFiles = (db: string) => [db, `${db}-wal`, `${db}-shm`];

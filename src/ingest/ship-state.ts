import { closeSync, fsyncSync, openSync, readFileSync, renameSync, unlinkSync, writeFileSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import type { FilePosition } from "./file-follower.js";

/**
 * Where `reqlog ship` stands in each file it follows, kept in a JSON file:
 * for every file (by identity) not yet finished, the offset after the last
 * line the server acknowledged. It is written only after an
 * acknowledgement, atomically (a temporary file, fsync, rename, fsync of the
 * folder), so after a crash or kill -9 it names a position whose lines are
 * all stored, and the lines after it are sent again (stored once: their
 * request ids are the same).
 */
export interface ShipState {
  /** Saved positions, by file identity. */
  readonly positions: ReadonlyMap<string, FilePosition>;
  /** Records a file's position (after an acknowledgement) and saves the state. */
  set(position: FilePosition): void;
  /** Forgets a finished file and saves the state. */
  drop(identity: string): void;
  /** Releases the state file's lock. */
  release(): void;
}

interface StateFile {
  version: 1;
  files: FilePosition[];
}

function load(path: string): Map<string, FilePosition> {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return new Map();
    throw new Error(`cannot read the state file ${path}: ${(err as Error).message}`, { cause: err });
  }
  let parsed: StateFile;
  try {
    parsed = JSON.parse(text) as StateFile;
  } catch (err) {
    throw new Error(`the state file ${path} is not JSON (${(err as Error).message}); move it away to start over`, { cause: err });
  }
  if (parsed === null || typeof parsed !== "object" || parsed.version !== 1 || !Array.isArray(parsed.files)) {
    throw new Error(`the state file ${path} is not a reqlog ship state (version 1); move it away to start over`);
  }
  parsed.files.forEach((file, i) => {
    const problem = positionProblem(file);
    if (problem !== undefined) {
      throw new Error(
        `the state file ${path} is corrupt: files[${i}]${problem}; move it away to start over ` +
          "(its files are then read from their start, and the lines sent before are stored once: their ids come from the file and the line's offset)",
      );
    }
  });
  return new Map(parsed.files.map((f) => [f.identity, f]));
}

const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

/**
 * What is wrong with a saved position, if anything: a position that is not a
 * whole byte offset would be read from another place and name its lines by
 * other ids, so they would be stored again (`"offset": "abc"` sent the whole
 * file again under ids ending in "abc0", "abc123"...).
 */
function positionProblem(file: unknown): string | undefined {
  if (file === null || typeof file !== "object") return ` is ${JSON.stringify(file)}, not a file's position`;
  const { path, identity, offset, line } = file as Record<string, unknown>;
  if (typeof path !== "string" || path === "") return `.path is ${JSON.stringify(path)}, not a path`;
  if (typeof identity !== "string" || !/^[0-9a-f]{16}$/.test(identity)) {
    return `.identity is ${JSON.stringify(identity)}, not a file identity (16 hex digits)`;
  }
  if (!isCount(offset)) return `.offset is ${JSON.stringify(offset)}, not a byte offset (a whole number ≥ 0)`;
  if (!isCount(line)) return `.line is ${JSON.stringify(line)}, not a line count (a whole number ≥ 0)`;
  return undefined;
}

function save(path: string, positions: ReadonlyMap<string, FilePosition>): void {
  const temporary = `${path}.tmp`;
  const state: StateFile = { version: 1, files: [...positions.values()] };
  const fd = openSync(temporary, "w");
  try {
    writeSync(fd, `${JSON.stringify(state, null, 1)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, path);
  const dir = openSync(dirname(path), "r");
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}

/** Whether a process with this id runs. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Takes `<path>.lock` (holding this process's id): two ship processes on one
 * state would each save positions the other has not reached. A lock left by
 * a process that is gone (killed) is taken over.
 */
function lock(path: string): () => void {
  const lockPath = `${path}.lock`;
  for (let tries = 0; tries < 2; tries++) {
    try {
      writeFileSync(lockPath, `${process.pid}\n`, { flag: "wx" });
      return () => {
        try {
          unlinkSync(lockPath);
        } catch {
          // already gone
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") {
        throw new Error(`cannot lock the state file ${path}: ${(err as Error).message}`, { cause: err });
      }
      const holder = Number(readFileSync(lockPath, "utf8").trim());
      if (Number.isInteger(holder) && holder > 0 && alive(holder)) {
        throw new Error(`the state file ${path} is in use by process ${holder} (another reqlog ship)`);
      }
      unlinkSync(lockPath);
    }
  }
  throw new Error(`cannot lock the state file ${path}`);
}

/** Opens (or starts) the state at `path`, locked for this process. */
export function openShipState(path: string): ShipState {
  const release = lock(path);
  let positions: Map<string, FilePosition>;
  try {
    positions = load(path);
  } catch (err) {
    release();
    throw err;
  }
  return {
    positions,
    set(position) {
      positions.set(position.identity, position);
      save(path, positions);
    },
    drop(identity) {
      if (positions.delete(identity)) save(path, positions);
    },
    release,
  };
}

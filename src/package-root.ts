import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The folder holding reqlog's package.json, found from this file whether it
 * runs from src/ (tests) or dist/src/ (built), so non-code assets such as the
 * SQL migrations are read from one place.
 */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, "package.json"))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error("cannot find reqlog's package.json above " + import.meta.url);
    dir = parent;
  }
  return dir;
}

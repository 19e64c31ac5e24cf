import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..", "..");

function sources(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.c?ts$/.test(e.name))
    .map((e) => relative(root, join(e.parentPath, e.name)));
}

/** Module specifiers a file imports (static and dynamic). */
function importsOf(file: string): string[] {
  const text = readFileSync(join(root, file), "utf8");
  return [...text.matchAll(/(?:from|import)\s*\(?\s*"([^"]+)"/g)].map((m) => m[1]!);
}

/** The layers below the transports, and what none of them may import (docs/architecture.md). */
const transportFree = ["src/service", "src/store", "src/query", "src/write", "src/domain"];
const files = [...transportFree.flatMap(sources), "src/reqlog-error.ts"];

describe("layers", () => {
  it("keeps grpc-js and the transport edges out of the service, store, query, write and domain code", () => {
    const offending = files.flatMap((file) =>
      importsOf(file)
        .filter((spec) => spec.startsWith("@grpc/") || spec.startsWith("@connectrpc/") || /\/grpc\//.test(spec))
        .map((spec) => `${file} imports ${spec}`),
    );
    expect(files.length).toBeGreaterThan(30);
    expect(offending).toEqual([]);
  });

  it("keeps SQLite inside its backend: nothing above src/store/sqlite imports it or better-sqlite3", () => {
    const above = files.filter((f) => !f.startsWith("src/store/sqlite/"));
    const offending = above.flatMap((file) =>
      importsOf(file)
        .filter((spec) => spec === "better-sqlite3" || spec.includes("/sqlite/"))
        .map((spec) => `${file} imports ${spec}`),
    );
    expect(offending).toEqual([]);
  });

  // Each backend is laid out by data flow (docs/architecture.md): rows/ (stored forms) under write/ and read/,
  // and a Read never reaches into the write path.
  for (const backend of ["src/store/sqlite", "src/store/clickhouse"]) {
    /** `file`'s relative imports that land in one of `folders` of the backend. */
    const importsInto = (file: string, folders: string[]) =>
      importsOf(file)
        .filter((spec) => spec.startsWith("."))
        .map((spec) => relative(root, join(root, dirname(file), spec)))
        .filter((target) => folders.some((folder) => target.startsWith(`${backend}/${folder}/`)))
        .map((target) => `${file} imports ${target}`);

    it(`keeps ${backend}'s read/ out of its write/, and its rows/ out of both`, () => {
      const read = sources(`${backend}/read`);
      const rows = sources(`${backend}/rows`);
      expect(read.length).toBeGreaterThan(3);
      expect(sources(`${backend}/write`).length).toBeGreaterThan(3);
      expect(rows.length).toBeGreaterThan(1);
      expect(read.flatMap((file) => importsInto(file, ["write"]))).toEqual([]);
      expect(rows.flatMap((file) => importsInto(file, ["read", "write"]))).toEqual([]);
    });
  }
});

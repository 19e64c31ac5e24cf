import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..", "..");

function sources(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts"))
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
});

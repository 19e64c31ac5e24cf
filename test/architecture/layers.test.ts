import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
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

/** Every import of `files` that `forbidden` matches, as "file imports spec". */
function offending(files: string[], forbidden: (spec: string) => boolean): string[] {
  return files.flatMap((file) => importsOf(file).filter(forbidden).map((spec) => `${file} imports ${spec}`));
}

/** The files of src/ each file imports (type imports too: a type circle ties two modules as tightly). */
function importGraph(files: string[]): Map<string, string[]> {
  const known = new Set(files);
  return new Map(
    files.map((file) => [
      file,
      importsOf(file)
        .filter((spec) => spec.startsWith("."))
        .map((spec) => relative(root, resolve(root, dirname(file), spec)).replace(/\.js$/, ".ts"))
        .filter((target) => known.has(target)),
    ]),
  );
}

/** The strongly connected groups of more than one file (Tarjan): each is an import circle. */
function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (file: string) => {
    index.set(file, next);
    low.set(file, next++);
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file)!) {
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (onStack.has(target)) low.set(file, Math.min(low.get(file)!, index.get(target)!));
    }
    if (low.get(file) !== index.get(file)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.push(member);
    } while (member !== file);
    if (group.length > 1) found.push(group.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

const all = sources("src");
/** The layers below the transports, and what none of them may import (docs/architecture.md). */
const transportFree = ["src/service", "src/store", "src/query", "src/write", "src/domain"];
const files = [...transportFree.flatMap(sources), "src/reqlog-error.ts"];

describe("layers", () => {
  it("keeps grpc-js and the transport edges out of the service, store, query, write and domain code", () => {
    const found = offending(files, (spec) => spec.startsWith("@grpc/") || spec.startsWith("@connectrpc/") || /\/grpc\//.test(spec));
    expect(files.length).toBeGreaterThan(30);
    expect(found).toEqual([]);
  });

  it("keeps grpc-js inside src/grpc/: every other file reaches it through that edge", () => {
    const outside = all.filter((f) => !f.startsWith("src/grpc/"));
    expect(outside.length).toBeGreaterThan(100);
    expect(offending(outside, (spec) => spec === "@grpc/grpc-js" || spec.startsWith("@grpc/grpc-js/"))).toEqual([]);
  });

  it("keeps SQLite inside its backend: nothing above src/store/sqlite imports it or better-sqlite3", () => {
    const above = files.filter((f) => !f.startsWith("src/store/sqlite/"));
    expect(offending(above, (spec) => spec === "better-sqlite3" || spec.includes("/sqlite/"))).toEqual([]);
  });

  it("keeps the ClickHouse client inside its backend: only src/store/clickhouse imports @clickhouse/client", () => {
    const outside = all.filter((f) => !f.startsWith("src/store/clickhouse/"));
    expect(offending(outside, (spec) => spec.startsWith("@clickhouse/"))).toEqual([]);
  });

  it("keeps the read plans free of the storage contract: nothing in src/query imports src/store", () => {
    const query = sources("src/query");
    expect(query.length).toBeGreaterThan(3);
    expect(offending(query, (spec) => /(^|\/)store\//.test(spec))).toEqual([]);
  });

  it("keeps the domain types at the bottom: src/domain imports no other layer", () => {
    const domain = sources("src/domain");
    expect(offending(domain, (spec) => spec.startsWith(".") && !spec.startsWith("./") && !/\/gen\//.test(spec))).toEqual([]);
  });

  it("has no import circles in src/ (the layers and their files form a tree of imports)", () => {
    expect(circles(importGraph(all))).toEqual([]);
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

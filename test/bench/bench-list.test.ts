import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { benches, leftOut } from "../../bench/bench-list.js";

const root = join(import.meta.dirname, "..", "..");
const scripts = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).scripts as Record<string, string>;

describe("npm run bench", () => {
  it("runs every bench script of package.json or names it as left out, with why", () => {
    const benchScripts = Object.entries(scripts)
      .filter(([name]) => /^(bench:|fuzz:|crash:)/.test(name))
      .map(([name, command]) => {
        const file = /node dist\/bench\/([\w-]+)\.js/.exec(command)?.[1];
        expect(file, `${name} runs a bench under dist/bench`).toBeDefined();
        return file!;
      });
    const listed = new Set([...benches.map((b) => b.script), ...Object.keys(leftOut)]);
    expect(benchScripts.filter((file) => !listed.has(file))).toEqual([]);
    expect(benchScripts.length).toBeGreaterThan(15);
    for (const why of Object.values(leftOut)) expect(why).toMatch(/npm run /);
  });

  it("lists no bench twice and none that has no script", () => {
    const run = benches.map((b) => b.script);
    expect(new Set(run).size).toBe(run.length);
    expect(run.filter((script) => script in leftOut)).toEqual([]);
    const files = new Set(Object.values(scripts).map((command) => /node dist\/bench\/([\w-]+)\.js/.exec(command)?.[1]));
    expect([...run, ...Object.keys(leftOut)].filter((script) => !files.has(script))).toEqual([]);
  });
});

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { crashCycles } from "../../bench/harness/crash.js";

const dir = mkdtempSync(join(tmpdir(), "reqlog-crash-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("crash safety", () => {
  it("keeps every acknowledged write across repeated kill -9, with the database intact", async () => {
    const perCycle: number[] = [];
    const report = await crashCycles(join(dir, "crash.db"), 3, (_cycle, acked) => perCycle.push(acked));
    expect(perCycle.every((n) => n > 10)).toBe(true);
    expect(report.integrity).toBe("ok");
    expect(report.missing).toEqual([]);
    expect(report.acknowledged).toBe(perCycle.reduce((a, b) => a + b, 0));
  });
});

import { describe, expect, it } from "vitest";
import { compileRegex, re2MaxBytes, regexCacheBytes, regexCacheSize } from "../../src/query/regex-cache.js";
import { regexCost } from "../../src/query/regex-cost.js";

describe("the compiled-pattern cache", () => {
  it("keeps at most regexCacheBytes of patterns, each counted at the most RE2 may hold for one, dropping the least recently used", () => {
    const first = compileRegex("cache-first");
    const kept = regexCacheBytes / re2MaxBytes;
    expect(kept).toBeGreaterThanOrEqual(2);
    for (let i = 0; i < 100; i++) {
      compileRegex(`cache-${i}`);
      expect(regexCacheSize()).toBeLessThanOrEqual(regexCacheBytes);
    }
    // Dropped long since (a cache of 1,000 patterns of any size kept it): compiled anew.
    expect(compileRegex("cache-first")).not.toBe(first);
    // The one used last is reused; using it again keeps it while others come in.
    const recent = compileRegex("cache-recent");
    for (let i = 0; i < kept - 1; i++) {
      compileRegex(`cache-more-${i}`);
      expect(compileRegex("cache-recent")).toBe(recent);
    }
  });
});

describe("regexCost", () => {
  it.each<[string, number]>([
    ["zip/raw", 7],
    ["(?i)bot|crawler|spider", 19],
    ["[0-9]{1,3}\\.[0-9]{1,3}", 9],
    [".{1000}Q", 4002],
    ["\\pL+", 2001],
    ["[\\pL\\pN]{3}", 3001],
    ["(?i)(\\pL|\\pN|\\pP){190}N", 570_572],
  ])("estimates %s at %d", (pattern, cost) => {
    expect(regexCost(pattern)).toBe(cost);
  });
});

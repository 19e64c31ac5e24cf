import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createKnownKeys } from "../../src/store/clickhouse/write/known-keys.js";

describe("known keys (the ClickHouse writer's Bloom filter)", () => {
  it("answers maybe for every key added, across growth past its capacity", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.string(), fc.string({ unit: "binary" })), { maxLength: 300 }), (keys) => {
        const known = createKnownKeys(16);
        for (const [app, id] of keys) known.add(app, id);
        expect(keys.every(([app, id]) => known.mayHave(app, id))).toBe(true);
        expect(known.count).toBe(keys.length);
      }),
    );
  });

  it("answers no for nearly every key never added (about 1% false maybes at capacity)", () => {
    const known = createKnownKeys(100_000);
    for (let i = 0; i < 100_000; i++) known.add("forge", `req-${i}`);
    let maybes = 0;
    for (let i = 0; i < 100_000; i++) if (known.mayHave("forge", `other-${i}`)) maybes++;
    expect(maybes).toBeLessThan(2_000);
    // The same id under another app is another key.
    expect(known.mayHave("pages", "req-1") && known.mayHave("pages", "req-2") && known.mayHave("pages", "req-3")).toBe(false);
  });
});

import { describe, expect, it } from "vitest";
import { aheadText } from "../../src/write/time-window.js";

const second = 1_000_000n;

describe("how far ahead a refused time is, in its message", () => {
  it.each([
    [90n * second, "90 seconds"],
    [120n * second, "2 minutes"],
    [150n * second, "about 3 minutes"],
    [86_400n * second, "24 hours"],
    [86_401n * second, "about 24 hours"],
    [3n * 86_400n * second, "3 days"],
    [3n * 86_400n * second - 1n, "about 3 days"],
    [2n ** 63n - 1n, "about 292271 years"],
  ])("%s µs reads %s", (usec, text) => {
    expect(aheadText(usec)).toBe(text);
  });
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatCombined } from "../../src/format/combined-line.js";
import { combinedLineOf, combinedMatchArgsSql } from "../../src/store/sqlite/read/combined-match.js";
import { minimalLog, rid } from "../helpers/fixtures.js";
import { useTestServer } from "../helpers/test-server.js";

const ts = useTestServer();

// Field text: mostly plain, sometimes with the characters that need escaping.
const text = fc.oneof(
  { arbitrary: fc.string({ maxLength: 12 }), weight: 3 },
  { arbitrary: fc.constantFrom("", '"quoted"', "back\\slash", "tab\there", "\u00e9t\u00e9", "\u{1f600}"), weight: 1 },
);
const optional = (arb: fc.Arbitrary<string>) => fc.option(arb, { nil: undefined });

let n = 0;
const now = BigInt(Date.now()) * 1000n;

describe("the combined line a scan matches", () => {
  it("equals formatCombined for every stored record, derived or kept", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          ip: text,
          nickname: optional(text),
          method: text.filter((s) => s !== ""),
          resource: text.filter((s) => s !== ""),
          httpVersion: text,
          status: fc.integer({ min: 0, max: 999 }),
          responseSize: fc.bigInt({ min: 0n, max: 1n << 40n }),
          referrer: optional(text),
          userAgent: optional(text),
          // 1970 to now: the server refuses end times over a day ahead of its clock (max-future-seconds).
          startTime: fc.bigInt({ min: 0n, max: now }),
          latency: fc.bigInt({ min: 0n, max: 10_000_000_000n }),
        }),
        async (fields) => {
          const requestId = rid(`c${n++}`);
          const log = minimalLog({ requestId, ...fields, endTime: fields.startTime + fields.latency });
          const expected = formatCombined(log);
          await ts.write(log);
          const args = ts.db
            .prepare(`SELECT ${combinedMatchArgsSql} FROM requests r WHERE r.request_id = ?`)
            .raw()
            .safeIntegers()
            .get(Buffer.from(requestId)) as unknown[];
          expect(combinedLineOf(args)).toBe(expected);
          const [stored] = await ts.stored(requestId);
          expect(stored!.combined).toBe(expected);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("stores nothing for a line it can derive", async () => {
    await ts.write(minimalLog({ requestId: rid("plain"), ip: "192.0.2.7" }));
    await ts.write(minimalLog({ requestId: rid("quoted"), userAgent: 'say "hi"' }));
    const stored = (id: string) =>
      ts.db.prepare("SELECT combined FROM requests WHERE request_id = ?").pluck().get(Buffer.from(id));
    expect(stored("plain")).toBeNull();
    expect(stored("quoted")).toContain('"say \\"hi\\""');
  });
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { identityOf, lineRequestId } from "../../src/ingest/file-identity.js";
import { lineChunks } from "../../src/ingest/line-chunks.js";

async function collect(pieces: Uint8Array[], maxLines: number, maxLineBytes?: number) {
  async function* stream() {
    yield* pieces;
  }
  const chunks = [];
  for await (const chunk of lineChunks(stream(), maxLines, maxLineBytes)) chunks.push(chunk);
  return chunks;
}

/** A text's lines with their byte offsets, the model. */
function model(text: string): { lines: string[]; starts: number[] } {
  const lines: string[] = [];
  const starts: number[] = [];
  let offset = 0;
  const parts = text.split("\n");
  parts.forEach((part, i) => {
    if (i === parts.length - 1 && part === "") return; // after the final line break
    lines.push(part);
    starts.push(offset);
    offset += Buffer.byteLength(part) + 1;
  });
  return { lines, starts };
}

describe("lines of a byte stream, property", () => {
  it("gives every line once with its byte offset and line number, however the bytes are split and chunked, lines over the maximum as their length", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.string({ unit: "grapheme", maxLength: 40 }).map((s) => s.replace(/\n/g, "")), { minLength: 1, maxLength: 40 }),
        fc.boolean(),
        fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 1, max: 7 }),
        fc.integer({ min: 1, max: 120 }),
        async (lines, finalBreak, cuts, maxLines, maxLineBytes) => {
          const text = lines.join("\n") + (finalBreak ? "\n" : "");
          const bytes = Buffer.from(text);
          const pieces: Uint8Array[] = [];
          for (let at = 0, i = 0; at < bytes.length; i++) {
            const size = cuts[i % cuts.length]!;
            pieces.push(bytes.subarray(at, at + size));
            at += size;
          }
          const chunks = await collect(pieces, maxLines, maxLineBytes);
          const expected = model(text);
          const tooLong = new Map<number, number>();
          expected.lines = expected.lines.map((line, i) => {
            const bytes = Buffer.byteLength(line);
            if (bytes <= maxLineBytes) return line;
            tooLong.set(expected.starts[i]!, bytes);
            return "";
          });
          if (bytes.length === 0) {
            expect(chunks).toEqual([]);
            return;
          }
          expect(chunks.flatMap((c) => c.lines)).toEqual(expected.lines);
          expect(chunks.flatMap((c) => c.starts)).toEqual(expected.starts);
          expect(new Map(chunks.flatMap((c) => [...(c.tooLong ?? [])]))).toEqual(tooLong);
          let line = 1;
          for (const chunk of chunks) {
            expect(chunk.lines.length).toBeLessThanOrEqual(maxLines);
            expect(chunk.firstLine).toBe(line);
            line += chunk.lines.length;
            expect(chunk.identity).toBe(identityOf(bytes, true));
          }
          expect(chunks.at(-1)!.end).toBe(bytes.length);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("gives the complete lines read before the stream fails, then its error", async () => {
    async function* truncated() {
      yield Buffer.from("first line\nsecond line\nthird, cut");
      throw new Error("unexpected end of file");
    }
    const chunks: string[][] = [];
    const failed = (async () => {
      for await (const chunk of lineChunks(truncated(), 100)) chunks.push(chunk.lines);
    })();
    await expect(failed).rejects.toThrow("unexpected end of file");
    expect(chunks).toEqual([["first line", "second line"]]);
  });

  it("names a file by its first line, so a copy or a longer version of it is the same file", () => {
    const first = Buffer.from("203.0.113.9 - - [18/Nov/2026:11:06:40 +0000] \"GET / HTTP/1.1\" 200 0\n");
    const longer = Buffer.concat([first, Buffer.from("second line\n")]);
    expect(identityOf(first, false)).toBe(identityOf(longer, false));
    expect(identityOf(first, false)).toMatch(/^[0-9a-f]{16}$/);
    expect(identityOf(first.subarray(0, 20), false)).toBeUndefined(); // the first line is still being written
    expect(identityOf(first.subarray(0, 20), true)).toMatch(/^[0-9a-f]{16}$/);
    expect(identityOf(Buffer.alloc(0), true)).toBeUndefined();
    expect(identityOf(Buffer.from("another first line\n"), false)).not.toBe(identityOf(first, false));
    expect(lineRequestId("0123456789abcdef", 4096)).toBe("0123456789abcdef:4096");
  });
});

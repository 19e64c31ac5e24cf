import { parseRe2, type Re2Node } from "./re2-syntax.js";

/**
 * What a class naming a Unicode property (\pL, \p{Greek}, [\pL\pN]) weighs:
 * RE2 compiles each into hundreds of UTF-8 byte ranges (\pL{100} took 173 ms
 * to compile, `(?i)(\pL|\pN|\pP){190}` 390–500 ms, on the calling thread).
 */
const unicodeClassCost = 1000;
/** Any other class, and `.`: RE2 compiles them into a few byte ranges. */
const classCost = 4;

function costOf(node: Re2Node): number {
  switch (node.kind) {
    case "chars":
      return 1;
    case "char":
      return node.unicode ? unicodeClassCost : classCost;
    case "anything":
      return classCost;
    case "empty":
      return 0;
    case "concat":
      return node.parts.reduce((sum, part) => sum + costOf(part), 0);
    case "alternate":
      return node.parts.reduce((sum, part) => sum + costOf(part), node.parts.length);
    case "repeat":
      // RE2 writes x{2,5} out as x x x? x? x?, and x{3,} as x x x+.
      return costOf(node.part) * Math.max(1, node.max ?? node.min + 1) + 1;
  }
}

/**
 * A pattern's compile cost, estimated from its text: each character 1, a
 * class 4, a Unicode property class 1000, repetitions written out (x{100}
 * costs 100 x's). RE2's compile time and the work of each match grow with
 * it; the max-regex-cost limit bounds it before anything is compiled. Where
 * the parser gives up (re2-syntax.ts), every repetition count in the text
 * multiplies the whole pattern.
 */
export function regexCost(pattern: string): number {
  const tree = parseRe2(pattern);
  if (tree) return costOf(tree);
  let widest = 1;
  for (const m of pattern.matchAll(/\{(\d+)(?:,(\d*))?\}/g)) widest *= Math.max(1, Number(m[2] || m[1]));
  const unicode = pattern.match(/\\[pP]/g)?.length ?? 0;
  return (pattern.length + unicode * unicodeClassCost) * widest;
}

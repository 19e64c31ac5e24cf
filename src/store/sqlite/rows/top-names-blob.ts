import { emptyTopNames, type TopNames } from "../../../domain/top-names.js";
import { VarintReader, createVarintWriter } from "./varint.js";

/**
 * A top-names summary as a column value: its floor, then per name its
 * UTF-8 text, count, over and errors, as varints, in the summary's order
 * (which decides ties when a name is let go, so it is kept).
 */
export function encodeTopNames(summary: TopNames): Buffer {
  const out = createVarintWriter();
  out.uint(summary.floor);
  for (const [name, e] of summary.entries) {
    out.text(name);
    out.uint(e.count);
    out.uint(e.over);
    out.uint(e.errors);
  }
  return out.done();
}

export function decodeTopNames(blob: Uint8Array): TopNames {
  const input = new VarintReader(blob);
  const summary = emptyTopNames();
  summary.floor = input.uint();
  while (input.more) {
    const name = input.text();
    summary.entries.set(name, { count: input.uint(), over: input.uint(), errors: input.uint() });
  }
  return summary;
}

import { charLength } from "./required-strings.js";

/**
 * The pieces of a required string (required-strings.ts) as a search index
 * of combined lines sees them: cut at the characters that separate a
 * derived line's fields (space, quote, brackets). A piece without them lies
 * inside one field of the line, the time or a fixed part (plainFields in
 * format/combined-line.ts makes sure of it for every line a store derives).
 */
export function linePieces(required: string): string[] {
  return required.split(/[ "[\]]+/).filter((p) => p !== "");
}

const monthNames = "JanFebMarAprMayJunJulAugSepOctNovDec";

/** Whether `piece` (free of separators) may lie in the time of a line (`dd/Mon/yyyy:HH:MM:SS`) or its fixed parts. */
export function mayBeInTimeOrFixed(piece: string): boolean {
  if ("-".includes(piece) || "+0000".includes(piece)) return true;
  if (/[^0-9A-Za-z/:]/.test(piece)) return false;
  const letters = piece.match(/[A-Za-z]+/g) ?? [];
  const digits = piece.match(/[0-9]+/g) ?? [];
  return letters.every((l) => l.length <= 3 && monthNames.includes(l)) && digits.every((d) => d.length <= 4);
}

/**
 * Whether an index of a line's fields can say nothing of `piece`: too short
 * for a trigram, a number (status, size), in the time or the fixed parts,
 * or holding NUL (which no stored text does here).
 */
export function unindexablePiece(piece: string): boolean {
  return charLength(piece) < 3 || /^[0-9-]+$/.test(piece) || mayBeInTimeOrFixed(piece) || piece.includes("\u0000");
}

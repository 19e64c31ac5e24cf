import { ReqlogError } from "../../reqlog-error.js";

/** Where a token starts: line and column (from 1, in characters) as a user counts them. */
export interface Position {
  line: number;
  column: number;
}

/**
 * A refused query: INVALID_ARGUMENT whose message starts with where the
 * problem is, `line 1, column 17: unknown field 'stauts'`, so the CLI and
 * the dashboard can point at it (queryErrorPosition reads it back).
 */
export function queryError(at: Position, message: string): ReqlogError {
  return ReqlogError.invalid(`line ${at.line}, column ${at.column}: ${message}`);
}

/** The position a query error's message starts with, or undefined. */
export function queryErrorPosition(message: string): Position | undefined {
  const m = /^line (\d+), column (\d+): /.exec(message);
  return m ? { line: Number(m[1]), column: Number(m[2]) } : undefined;
}

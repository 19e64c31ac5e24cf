import { ReqlogError } from "../reqlog-error.js";

/** Longest app, module, version, instance or request id, in bytes. */
export const maxIdentifierBytes = 256;

/** An identifier must be non-empty and at most maxIdentifierBytes long. */
export function checkIdentifier(value: string | Uint8Array, what: string): void {
  const bytes = typeof value === "string" ? Buffer.byteLength(value, "utf8") : value.byteLength;
  if (bytes === 0) throw ReqlogError.invalid(`${what} is empty`);
  if (bytes > maxIdentifierBytes) {
    throw ReqlogError.invalid(`${what} is ${bytes} bytes long, over the maximum of ${maxIdentifierBytes}`);
  }
}

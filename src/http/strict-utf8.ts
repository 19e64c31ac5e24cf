const decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * A JSON body's text, or undefined when its bytes are not UTF-8: stored text
 * is never altered, so such a body is refused rather than read with U+FFFD
 * in place of what did not decode (as Buffer#toString and Connect would).
 */
export function strictUtf8(bytes: Uint8Array): string | undefined {
  try {
    return decoder.decode(bytes);
  } catch {
    return undefined;
  }
}

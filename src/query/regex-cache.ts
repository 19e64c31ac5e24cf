import RE2 from "re2";

/** The flags every reqlog pattern is compiled with. */
export const re2Flags = "u";

/**
 * The most memory RE2 gives one compiled pattern (its default max_mem): the
 * program, the reverse program and the DFA states it builds while matching
 * share it. A pattern built to blow up its DFA, `(?i)(\pL|\pN|\pP){190}N`,
 * held ~4.7 MB.
 */
export const re2MaxBytes = 8 * 1024 * 1024;

/**
 * Bytes of compiled patterns each thread keeps for reuse, each counted at
 * re2MaxBytes (what it may come to hold as it matches): four patterns.
 */
export const regexCacheBytes = 32 * 1024 * 1024;

/** Compiled patterns, least recently used first. */
const cache = new Map<string, RE2>();

/**
 * RE2 keeps its programs and DFAs outside V8's heap without telling V8, so
 * patterns dropped from the cache (or never cached) were collected only
 * when the JS heap itself filled: distinct patterns read from a small heap
 * grew the process by gigabytes. Each compiled pattern carries an untouched
 * allocation of re2MaxBytes (never written, so never resident), which V8
 * counts as external memory and collects with the pattern.
 */
const weights = new WeakMap<RE2, Buffer>();

/** A pattern compiled with reqlog's flags, from a cache bounded in bytes; throws RE2's error for an invalid one. */
export function compileRegex(source: string): RE2;
export function compileRegex(source: string | undefined): RE2 | undefined;
export function compileRegex(source: string | undefined): RE2 | undefined {
  if (source === undefined) return undefined;
  let re = cache.get(source);
  if (re) {
    // Moved to the end: the patterns used last are kept longest.
    cache.delete(source);
  } else {
    re = new RE2(source, re2Flags);
    weights.set(re, Buffer.allocUnsafeSlow(re2MaxBytes));
    for (const oldest of cache.keys()) {
      if ((cache.size + 1) * re2MaxBytes <= regexCacheBytes) break;
      cache.delete(oldest);
    }
  }
  cache.set(source, re);
  return re;
}

/** Bytes the cache holds now, counted as it counts them (for tests). */
export function regexCacheSize(): number {
  return cache.size * re2MaxBytes;
}

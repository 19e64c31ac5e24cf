/**
 * Trigrams (three characters, code points) as the search index's writer
 * handles them: a trigram of three ASCII characters, nearly every one of a
 * request's text, is a number (the three codes, 7 bits each), so a
 * document's distinct grams are a Set of small integers and its tokens come
 * from a table, with no string made per gram; any other trigram is its text.
 */
export type Gram = number | string;

const isAsciiCode = (code: number) => code < 0x80;

/** Whether every character of `text` is ASCII (then its grams are numbers, one a character triple). */
function isAsciiText(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (!isAsciiCode(text.charCodeAt(i))) return false;
  return true;
}

/** The Gram of a trigram's text. */
export function gramOf(text: string): Gram {
  if (text.length === 3) {
    const a = text.charCodeAt(0);
    const b = text.charCodeAt(1);
    const c = text.charCodeAt(2);
    if (isAsciiCode(a) && isAsciiCode(b) && isAsciiCode(c)) return (a << 14) | (b << 7) | c;
  }
  return text;
}

/** A Gram's text. */
export function gramText(gram: Gram): string {
  return typeof gram === "string" ? gram : String.fromCharCode(gram >> 14, (gram >> 7) & 0x7f, gram & 0x7f);
}

/** Adds the distinct trigrams of `text` to `grams`, in the order they first occur. */
export function addTrigrams(text: string, grams: Set<Gram>): void {
  const n = text.length;
  if (isAsciiText(text)) {
    if (n < 3) return;
    let gram = (text.charCodeAt(0) << 7) | text.charCodeAt(1);
    for (let i = 2; i < n; i++) {
      gram = ((gram << 7) & 0x1fffff) | text.charCodeAt(i);
      grams.add(gram);
    }
    return;
  }
  const cps = Array.from(text);
  for (let i = 0; i + 3 <= cps.length; i++) grams.add(gramOf(cps[i]! + cps[i + 1]! + cps[i + 2]!));
}

/** distinctGrams' table: the stamp of the last document each ASCII gram was seen in (4 MB, made when first used). */
let seen: Uint16Array | undefined;
let stamp = 0;
/** distinctGrams' answer, reused: its first `count` entries (not shortened, so not grown again). */
const found: { grams: Gram[]; count: number } = { grams: [], count: 0 };
/**
 * The most entries the answer's array keeps from one call to the next: a
 * longer one is emptied first. Kept at the largest document's size, one
 * resource of 2M CJK characters left 75 MB of stale grams (a string each)
 * reachable for as long as the process ran.
 */
const keptGrams = 1 << 14;

/** A document's distinct grams: the first `count` of `grams`. */
export interface DistinctGrams {
  readonly grams: readonly Gram[];
  readonly count: number;
}

/**
 * The distinct trigrams of a document's texts together, in the order they
 * first occur (the order addTrigrams gives with one Set for them all), as
 * the search index's writer makes every document: an ASCII gram is marked
 * seen in a table of every possible one, stamped per document, not put in
 * a Set (a Set per document was half of a document's cost). The answer is
 * the same object every call, its array kept at its size up to `keptGrams`
 * (emptied by `length = 0`, it was grown again for every document): valid
 * until the next call.
 */
export function distinctGrams(texts: readonly string[]): DistinctGrams {
  seen ??= new Uint16Array(1 << 21);
  if (++stamp > 0xffff) {
    seen.fill(0);
    stamp = 1;
  }
  const grams = found.grams;
  if (grams.length > keptGrams) grams.length = 0;
  let count = 0;
  let others: Set<Gram> | undefined;
  for (const text of texts) {
    const n = text.length;
    if (!isAsciiText(text)) {
      // Rare: code points, as addTrigrams takes them; its ASCII grams are stamped as the others.
      const set = new Set<Gram>();
      addTrigrams(text, set);
      for (const gram of set) {
        if (typeof gram === "number") {
          if (seen[gram] === stamp) continue;
          seen[gram] = stamp;
        } else {
          others ??= new Set();
          if (others.has(gram)) continue;
          others.add(gram);
        }
        grams[count++] = gram;
      }
      continue;
    }
    if (n < 3) continue;
    let gram = (text.charCodeAt(0) << 7) | text.charCodeAt(1);
    for (let i = 2; i < n; i++) {
      gram = ((gram << 7) & 0x1fffff) | text.charCodeAt(i);
      if (seen[gram] === stamp) continue;
      seen[gram] = stamp;
      grams[count++] = gram;
    }
  }
  found.count = count;
  return found;
}
/** The distinct trigrams of a text, as text. */
export function trigramsOf(text: string): string[] {
  const grams = new Set<Gram>();
  addTrigrams(text, grams);
  return [...grams].map(gramText);
}

const hexDigits = Array.from({ length: 128 }, (_, c) => c.toString(16).padStart(2, "0"));
/** Tokens of the ASCII grams met so far (at most 2^21 of them, 6 characters each). */
const asciiTokens = new Map<number, string>();

/** The hex digits of each ASCII code, as character codes: hexCodes[2c], hexCodes[2c + 1]. */
const hexCodes = Uint8Array.from(hexDigits.join(""), (c) => c.charCodeAt(0));

/**
 * Writes an ASCII gram's token (gramToken) into `buf` at `at` (6 bytes,
 * latin1), returning where it ends: a document's tokens are written into
 * one buffer, with no string made per gram.
 */
export function writeAsciiGramToken(buf: Uint8Array, at: number, gram: number): number {
  const a = (gram >> 14) << 1;
  const b = ((gram >> 7) & 0x7f) << 1;
  const c = (gram & 0x7f) << 1;
  buf[at] = hexCodes[a]!;
  buf[at + 1] = hexCodes[a + 1]!;
  buf[at + 2] = hexCodes[b]!;
  buf[at + 3] = hexCodes[b + 1]!;
  buf[at + 4] = hexCodes[c]!;
  buf[at + 5] = hexCodes[c + 1]!;
  return at + 6;
}

/** A trigram's token in the index: the hex of its UTF-8 bytes (one word to FTS5's ascii tokenizer). */
export function gramToken(gram: Gram): string {
  if (typeof gram === "string") gram = gramOf(gram);
  if (typeof gram === "string") return Buffer.from(gram, "utf8").toString("hex");
  let token = asciiTokens.get(gram);
  if (token === undefined) {
    if (asciiTokens.size >= 1 << 16) asciiTokens.clear();
    token = hexDigits[gram >> 14]! + hexDigits[(gram >> 7) & 0x7f]! + hexDigits[gram & 0x7f]!;
    asciiTokens.set(gram, token);
  }
  return token;
}

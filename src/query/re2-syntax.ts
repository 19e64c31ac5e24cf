/**
 * A parser of the RE2 patterns reqlog accepts (the dialect of the `re2`
 * package with the "u" flag: RE2's syntax plus the JavaScript escapes that
 * package translates, \uXXXX, \u{…}, \cX and \p{Long_Name}), into a tree
 * that keeps only what the search index needs to know: which characters
 * follow which.
 *
 * It is conservative by construction. Every node stands for a set of
 * strings that contains every string the real pattern's part matches:
 * a character class it does not enumerate is `char` (some one character),
 * a construct it does not follow inside a group it can delimit is
 * `anything`. Where it cannot even be sure where a construct ends (an
 * escape it does not know, unbalanced brackets), it gives up on the whole
 * pattern (undefined), and the caller scans. Patterns reaching it have
 * compiled as RE2 already (read-plan.ts), so giving up is rare.
 */

/** A pattern's tree: each node's strings include every string the part matches. */
export type Re2Node =
  /** Exactly one of these characters (code points). */
  | { kind: "chars"; chars: readonly number[] }
  /** Some one character (`unicode`: of a class that names a Unicode property, \pL, which compiles large). */
  | { kind: "char"; unicode?: true }
  /** Any string (a construct not followed). */
  | { kind: "anything" }
  /** The empty string (also assertions: ^ $ \b \A \z). */
  | { kind: "empty" }
  | { kind: "concat"; parts: readonly Re2Node[] }
  | { kind: "alternate"; parts: readonly Re2Node[] }
  /** `part` repeated `min` to `max` times (max undefined: no bound). */
  | { kind: "repeat"; part: Re2Node; min: number; max: number | undefined };

/** Classes of more members than this are just `char`. */
const maxClassChars = 100;

/**
 * Every character RE2's case folding (?i) makes equal to an ASCII letter:
 * the letter's two cases, and for k and s the Kelvin sign and the long s
 * (checked against RE2 over every code point by the tests). Other letters
 * under (?i) are not enumerated (a class of them is `char`).
 */
export function foldOrbit(cp: number): number[] | undefined {
  const lower = cp | 0x20;
  if (lower < 0x61 || lower > 0x7a || (cp > 0x5a && cp < 0x61)) {
    return undefined;
  }
  const orbit = [lower, lower - 0x20];
  if (lower === 0x6b) orbit.push(0x212a);
  if (lower === 0x73) orbit.push(0x17f);
  return orbit;
}

/** Whether RE2's case folding can make `cp` equal to another character (so (?i) changes what it matches). */
function hasCase(cp: number): boolean {
  if (foldOrbit(cp)) return true;
  if (cp === 0x212a || cp === 0x17f) return true;
  if (cp < 0x80) return false;
  const s = String.fromCodePoint(cp);
  return s.toLowerCase() !== s || s.toUpperCase() !== s;
}

class GiveUp extends Error {}

const perlClasses: Record<string, () => number[] | undefined> = {
  d: () => range(0x30, 0x39),
  s: () => [0x09, 0x0a, 0x0c, 0x0d, 0x20],
  w: () => [...range(0x30, 0x39), ...range(0x41, 0x5a), 0x5f, ...range(0x61, 0x7a)],
};

function range(lo: number, hi: number): number[] {
  const out: number[] = [];
  for (let c = lo; c <= hi; c++) out.push(c);
  return out;
}

const simpleEscapes: Record<string, number> = { a: 0x07, f: 0x0c, t: 0x09, n: 0x0a, r: 0x0d, v: 0x0b };

interface Flags {
  fold: boolean;
}

/** Parses `pattern`; undefined when some part of it is not understood for certain. */
export function parseRe2(pattern: string): Re2Node | undefined {
  const cps = Array.from(pattern, (c) => c.codePointAt(0)!);
  let i = 0;
  const peek = (k = 0) => cps[i + k];
  const at = (k: number, c: string) => cps[i + k] === c.codePointAt(0);

  function hexDigits(from: number, max: number): { value: number; length: number } | undefined {
    let value = 0;
    let length = 0;
    while (length < max && from + length < cps.length) {
      const d = Number.parseInt(String.fromCodePoint(cps[from + length]!), 16);
      if (Number.isNaN(d)) break;
      value = value * 16 + d;
      length++;
    }
    return length > 0 ? { value, length } : undefined;
  }

  /**
   * The escape at `i` (just past its backslash) as one character, a set,
   * or a non-character meaning; advances past it.
   */
  function escape(
    inClass: boolean,
  ): { char: number } | { chars: number[] | undefined; unicode?: true } | { empty: true } | { quote: number[] } {
    const e = peek();
    if (e === undefined) throw new GiveUp();
    const c = String.fromCodePoint(e);
    i++;
    if (!/[0-9A-Za-z]/.test(c)) return { char: e }; // an escaped punctuation character is itself
    if (c in simpleEscapes) return { char: simpleEscapes[c]! };
    const perl = perlClasses[c.toLowerCase()];
    if (perl) return { chars: c === c.toLowerCase() ? perl() : undefined };
    // \x{…} (and the re2 package's \u{…}): a code point in hex.
    const braced = (): { char: number } => {
      const hex = hexDigits(i + 1, 8);
      if (!hex || !at(1 + hex.length, "}")) throw new GiveUp();
      i += hex.length + 2;
      return { char: hex.value };
    };
    if (c === "x") {
      if (at(0, "{")) return braced();
      const hex = hexDigits(i, 2);
      if (!hex || hex.length !== 2) throw new GiveUp();
      i += 2;
      return { char: hex.value };
    }
    if (c === "u") {
      // The re2 package's translation: \u{…} as \x{…}, \uX to \uXXXX as \x{X…}.
      if (at(0, "{")) return braced();
      const hex = hexDigits(i, 4);
      if (!hex) throw new GiveUp();
      i += hex.length;
      return { char: hex.value };
    }
    if (c === "c") {
      // \cA to \cZ: a control character; anything else is not followed.
      const l = peek();
      if (l !== undefined && l >= 0x41 && l <= 0x5a) {
        i++;
        return { char: l - 0x40 };
      }
      throw new GiveUp();
    }
    if (c === "p" || c === "P") {
      if (at(0, "{")) {
        const end = cps.indexOf(0x7d, i);
        if (end < 0) throw new GiveUp();
        i = end + 1;
      } else {
        if (peek() === undefined) throw new GiveUp();
        i++;
      }
      return { chars: undefined, unicode: true };
    }
    if (!inClass) {
      if (c === "b" || c === "B" || c === "A" || c === "z") return { empty: true };
      if (c === "Q") {
        // \Q…\E: literal text (to the end of the pattern when \E is missing).
        const quoted: number[] = [];
        while (i < cps.length && !(at(0, "\\") && at(1, "E"))) quoted.push(cps[i++]!);
        if (i < cps.length) i += 2;
        return { quote: quoted };
      }
    }
    // Octal, \C (one byte) and anything else: not followed.
    throw new GiveUp();
  }

  /** One character `cp` as matched under the current flags. */
  function literal(cp: number, flags: Flags): Re2Node {
    if (!flags.fold || !hasCase(cp)) return { kind: "chars", chars: [cp] };
    const orbit = foldOrbit(cp) ?? (cp === 0x212a ? foldOrbit(0x6b) : cp === 0x17f ? foldOrbit(0x73) : undefined);
    return orbit ? { kind: "chars", chars: orbit } : { kind: "char" };
  }

  /** A class `[…]` starting at `i`, as the characters it matches (undefined: too many, or not enumerated). */
  function charClass(flags: Flags): Re2Node {
    i++; // [
    let negated = false;
    if (at(0, "^")) {
      negated = true;
      i++;
    }
    const members = new Set<number>();
    let enumerable = true;
    let unicode = false;
    let first = true;
    const add = (cps: readonly number[] | undefined) => {
      if (!cps) enumerable = false;
      else for (const cp of cps) members.add(cp);
    };
    const single = (): number | undefined => {
      const c = peek();
      if (c === undefined) throw new GiveUp();
      if (c === 0x5c) {
        i++;
        const e = escape(true);
        if ("char" in e) return e.char;
        if ("chars" in e) {
          add(e.chars);
          if (e.unicode) unicode = true;
          return undefined;
        }
        throw new GiveUp();
      }
      i++;
      return c;
    };
    for (;;) {
      const c = peek();
      if (c === undefined) throw new GiveUp();
      if (c === 0x5d && !first) {
        i++;
        break;
      }
      first = false;
      if (at(0, "[") && at(1, ":")) {
        // [:alpha:] and the like.
        const end = findSeq(cps, i + 2, [0x3a, 0x5d]);
        if (end < 0) throw new GiveUp();
        i = end + 2;
        enumerable = false;
        continue;
      }
      const lo = single();
      if (lo === undefined) continue;
      if (at(0, "-") && !at(1, "]") && peek(1) !== undefined) {
        i++;
        const hi = single();
        if (hi === undefined || hi < lo) throw new GiveUp();
        if (hi - lo > maxClassChars) enumerable = false;
        else add(range(lo, hi));
      } else {
        add([lo]);
      }
    }
    if (unicode) return { kind: "char", unicode: true };
    if (negated || !enumerable) return { kind: "char" };
    if (flags.fold) {
      for (const cp of [...members]) {
        if (!hasCase(cp)) continue;
        const orbit = foldOrbit(cp) ?? (cp === 0x212a ? foldOrbit(0x6b) : cp === 0x17f ? foldOrbit(0x73) : undefined);
        if (!orbit) return { kind: "char" };
        for (const o of orbit) members.add(o);
      }
    }
    if (members.size === 0 || members.size > maxClassChars) return { kind: "char" };
    return { kind: "chars", chars: [...members] };
  }

  /** Flags of a `(?flags)` or `(?flags:` group at `i` (past "(?"); undefined when it is no flag group. */
  function flagGroup(flags: Flags): { flags: Flags; scoped: boolean } | undefined {
    let j = i;
    let on = true;
    let fold = flags.fold;
    for (;;) {
      const c = cps[j] === undefined ? undefined : String.fromCodePoint(cps[j]!);
      if (c === undefined) return undefined;
      if (c === ")" || c === ":") {
        if (j === i) return undefined;
        i = j + 1;
        return { flags: { fold }, scoped: c === ":" };
      }
      if (c === "-") {
        if (!on) return undefined;
        on = false;
      } else if (c === "i") {
        fold = on;
      } else if (c !== "m" && c !== "s" && c !== "U") {
        return undefined;
      }
      j++;
    }
  }

  /** An alternation, up to a `)` at this depth or the end. */
  function alternation(outer: Flags): Re2Node {
    const flags = { ...outer };
    const branches: Re2Node[] = [];
    let parts: Re2Node[] = [];
    for (;;) {
      const c = peek();
      if (c === undefined || c === 0x29) break; // )
      if (c === 0x7c) {
        // |
        i++;
        branches.push({ kind: "concat", parts });
        parts = [];
        continue;
      }
      let atom: Re2Node | undefined;
      if (c === 0x28) {
        // (
        i++;
        if (at(0, "?")) {
          i++;
          const group = at(0, ":") ? { flags: (i++, flags), scoped: true } : flagGroup(flags);
          if (group && !group.scoped) {
            // (?i) and the like: for the rest of this group.
            flags.fold = group.flags.fold;
            continue;
          }
          if (group) {
            atom = alternation(group.flags);
          } else if (at(0, "P") && at(1, "<")) {
            i = nameEnd(i + 2);
            atom = alternation(flags);
          } else if (at(0, "<") && !at(1, "=") && !at(1, "!")) {
            i = nameEnd(i + 1);
            atom = alternation(flags);
          } else {
            throw new GiveUp(); // lookaround, back-references: not RE2
          }
        } else {
          atom = alternation(flags);
        }
        if (!at(0, ")")) throw new GiveUp();
        i++;
      } else if (c === 0x5b) {
        atom = charClass(flags);
      } else if (c === 0x2e) {
        i++;
        atom = { kind: "char" };
      } else if (c === 0x5e || c === 0x24) {
        i++;
        atom = { kind: "empty" };
      } else if (c === 0x5c) {
        i++;
        const e = escape(false);
        if ("char" in e) atom = literal(e.char, flags);
        else if ("chars" in e) atom = e.chars ? { kind: "chars", chars: e.chars } : e.unicode ? { kind: "char", unicode: true } : { kind: "char" };
        else if ("empty" in e) atom = { kind: "empty" };
        else atom = { kind: "concat", parts: e.quote.map((q) => literal(q, flags)) };
      } else if (c === 0x2a || c === 0x2b || c === 0x3f) {
        throw new GiveUp(); // a repetition with nothing to repeat
      } else if (c === 0x7b && repeatAt(i)) {
        throw new GiveUp();
      } else {
        i++;
        atom = literal(c, flags);
      }
      // Repetitions (RE2 allows several in a row: a** is a*).
      for (;;) {
        const q = peek();
        let min: number;
        let max: number | undefined;
        if (q === 0x2a) [min, max] = [0, undefined];
        else if (q === 0x2b) [min, max] = [1, undefined];
        else if (q === 0x3f) [min, max] = [0, 1];
        else if (q === 0x7b && repeatAt(i)) {
          const r = repeatAt(i)!;
          [min, max] = [r.min, r.max];
          i += r.length - 1;
        } else break;
        i++;
        if (at(0, "?")) i++; // lazy: the same strings
        atom = { kind: "repeat", part: atom, min, max };
      }
      parts.push(atom);
    }
    branches.push({ kind: "concat", parts });
    return branches.length === 1 ? branches[0]! : { kind: "alternate", parts: branches };
  }

  /** Index just past the `>` closing a group name starting at `from`. */
  function nameEnd(from: number): number {
    const end = cps.indexOf(0x3e, from);
    if (end < 0) throw new GiveUp();
    return end + 1;
  }

  /** The repetition `{n}`, `{n,}` or `{n,m}` at `from`, if it is one (else `{` is a literal). */
  function repeatAt(from: number): { min: number; max: number | undefined; length: number } | undefined {
    const m = /^\{(\d+)(?:(,)(\d*))?\}/.exec(String.fromCodePoint(...cps.slice(from, from + 16)));
    if (!m) return undefined;
    const min = Number(m[1]);
    const max = m[2] === undefined ? min : m[3] === "" ? undefined : Number(m[3]);
    return { min, max, length: m[0].length };
  }

  try {
    const tree = alternation({ fold: false });
    if (i !== cps.length) return undefined; // an unbalanced ")"
    return tree;
  } catch (err) {
    if (err instanceof GiveUp) return undefined;
    throw err;
  }
}

/** Index of the first occurrence of `seq` in `cps` at or after `from`, or -1. */
function findSeq(cps: readonly number[], from: number, seq: readonly number[]): number {
  for (let j = from; j + seq.length <= cps.length; j++) {
    if (seq.every((c, k) => cps[j + k] === c)) return j;
  }
  return -1;
}

/**
 * Literal strings every match of an RE2 pattern must contain, found by a
 * conservative reading of the pattern: the runs of plain characters in its
 * top-level concatenation. Anything the reading does not follow for certain
 * (alternation at the top, flags, \Q…\E) gives no literals, and then a scan
 * has no prefilter: it may miss a chance to skip rows, never a match.
 */

const repeat = /^\{(\d+)(?:,(\d*))?\}/;

/** Index just past the `]` that closes the class opened at `i`. */
function skipClass(p: string, i: number): number {
  let j = i + 1;
  if (p[j] === "^") j++;
  if (p[j] === "]") j++; // a leading ] is a member
  while (j < p.length && p[j] !== "]") {
    if (p[j] === "\\") j++;
    else if (p.startsWith("[:", j)) {
      const end = p.indexOf(":]", j + 2);
      if (end > 0) j = end + 1;
    }
    j++;
  }
  return j + 1;
}

/** Index just past the `)` that closes the group opened at `i`; -1 if it does not close. */
function skipGroup(p: string, i: number): number {
  let depth = 0;
  for (let j = i; j < p.length; j++) {
    const c = p[j];
    if (c === "\\") j++;
    else if (c === "[") j = skipClass(p, j) - 1;
    else if (c === "(") depth++;
    else if (c === ")" && --depth === 0) return j + 1;
  }
  return -1;
}

/** The required literal runs of `pattern` (each at least `minLength` characters), or [] when none are certain. */
export function requiredLiterals(pattern: string, minLength = 3): string[] {
  const runs: string[] = [];
  let run = "";
  const breakRun = () => {
    if (run.length >= minLength) runs.push(run);
    run = "";
  };
  let i = 0;
  while (i < pattern.length) {
    // Whole code points: a quantifier after 😀 applies to all of it, not to its second UTF-16 half.
    const c = String.fromCodePoint(pattern.codePointAt(i)!);
    // One atom: a literal character (lit) or something else (skipped, breaking the run).
    let lit: string | undefined;
    let next: number;
    if (c === "|") return []; // top-level alternation: nothing is required
    if (c === "\\") {
      const e = i + 1 < pattern.length ? String.fromCodePoint(pattern.codePointAt(i + 1)!) : undefined;
      if (e === undefined) return [];
      if (/[0-9A-Za-z]/.test(e)) {
        if (e === "Q" || e === "E") return [];
        // \d \w \b \pL \p{Greek} \x41 \u{263a} \u0041 \123 \cJ …: not followed as
        // literals, and with them what may be part of them (a {…} block, or up
        // to four letters and digits): a lost chance to skip rows at worst.
        next = i + 2;
        if (pattern[next] === "{") {
          const end = pattern.indexOf("}", next);
          if (end < 0) return [];
          next = end + 1;
        } else {
          for (let k = 0; k < 4 && /[0-9A-Za-z]/.test(pattern[next] ?? ""); k++) next++;
        }
      } else {
        lit = e;
        next = i + 1 + e.length;
      }
    } else if (c === "[") {
      next = skipClass(pattern, i);
    } else if (c === "(") {
      if (pattern[i + 1] === "?" && pattern[i + 2] !== ":" && pattern[i + 2] !== "P") return []; // flags
      next = skipGroup(pattern, i);
      if (next < 0) return [];
    } else if (c === "." || c === "^" || c === "$" || c === "{" || c === "}") {
      next = i + 1;
    } else if (c === ")" || c === "*" || c === "+" || c === "?") {
      return []; // not where an atom starts: leave the pattern to RE2
    } else {
      lit = c;
      next = i + c.length;
    }
    // The atom's repetition, if any.
    const q = pattern[next];
    const bounds = q === "{" ? repeat.exec(pattern.slice(next)) : null;
    const optional = q === "*" || q === "?" || (bounds !== null && Number(bounds[1]) === 0);
    const repeated = optional || q === "+" || bounds !== null;
    if (repeated) {
      next += bounds ? bounds[0].length : 1;
      if (pattern[next] === "?") next++; // lazy
    }
    if (lit !== undefined && !optional) run += lit;
    if (lit === undefined || repeated) breakRun();
    i = next;
  }
  breakRun();
  // Control characters cannot go into SQL text and never occur in a derived line.
  return runs.filter((r) => !/[\x00-\x1f\x7f]/.test(r));
}

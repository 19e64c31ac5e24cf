/**
 * Bounded counts of the names (client IPs, user agents) that make the most
 * requests of a period: a Space-Saving summary (Metwally, Agrawal and El
 * Abbadi, 2005) that also takes requests out again, as the rollups must when
 * a request is rewritten or expires.
 *
 * A summary holds at most `topNamesCapacity` names. A name not in it that
 * comes with requests takes the place of the name with the smallest count
 * when the summary is full, and starts from `floor`, the largest count any
 * name was let go with: every name not in the summary made at most `floor`
 * of the period's requests, so a name's true count always lies between its
 * `count - over` and its `count`. While a period never had more than the
 * capacity of distinct names, `floor` and every `over` stay 0 and the counts
 * are exact.
 *
 * Why removals keep those bounds: taking requests out of a counted name
 * lowers its count and its true count alike (its `over` is capped at its
 * count, so the lower bound stays at or below the truth); taking them out of
 * a name not in the summary only lowers a true count that was at most
 * `floor` already, so nothing changes.
 */
export const topNamesCapacity = 100;

export interface TopNameCount {
  /** An upper bound on the name's requests in the period. */
  count: number;
  /** `count - over` is a lower bound on them. */
  over: number;
  /** Its requests answered with 5xx counted while it was in the summary: a lower bound. */
  errors: number;
}

export interface TopNames {
  /** At most `topNamesCapacity`, in the order they came (the eviction's tie-break). */
  entries: Map<string, TopNameCount>;
  /** Every name not in `entries` made at most this many of the period's requests. */
  floor: number;
}

export function emptyTopNames(): TopNames {
  return { entries: new Map(), floor: 0 };
}

/**
 * A lower bound of every count in a summary, once a name has been let go
 * from it: the next name to let go (the first, in order, of the smallest
 * count) is the first entry found at the bound, so a full summary of a busy
 * hour's client IPs, most at the same count, is not scanned whole for each
 * new name (that scan was 3 µs of a stored record's 40). Kept beside the
 * summary, not in it: a summary read back from its column starts without
 * one. It stays a bound because a name let in starts above the floor, which
 * is at least every count let go, and a count that falls lowers it.
 */
const leastBound = new WeakMap<TopNames, number>();

/** Counts `requests` more of a name (fewer when negative), `errors` of them answered with 5xx. */
export function addToTopNames(summary: TopNames, name: string, requests: number, errors: number): void {
  const entry = summary.entries.get(name);
  if (entry) {
    entry.count += requests;
    entry.errors = Math.max(0, entry.errors + errors);
    // Its true count is at most its count: none left.
    if (entry.count <= 0) summary.entries.delete(name);
    else if (entry.over > entry.count) entry.over = entry.count;
    const bound = leastBound.get(summary);
    if (bound !== undefined && entry.count < bound) leastBound.set(summary, entry.count);
    return;
  }
  if (requests <= 0) return;
  if (summary.entries.size >= topNamesCapacity) {
    const bound = leastBound.get(summary) ?? -Infinity;
    let smallest: string | undefined;
    let least = Infinity;
    for (const [n, e] of summary.entries) {
      if (e.count < least) {
        least = e.count;
        smallest = n;
        // Nothing is below the bound: the first at it is the first of the smallest.
        if (least <= bound) break;
      }
    }
    summary.entries.delete(smallest!);
    if (least > summary.floor) summary.floor = least;
    leastBound.set(summary, least);
  }
  // It may have been counted before and let go: up to `floor` of its requests are not in any count.
  summary.entries.set(name, { count: summary.floor + requests, over: summary.floor, errors: Math.max(0, errors) });
}

/** A name's requests over several periods: an estimate, and how far the exact count may be from it. */
export interface TopName {
  name: string;
  requests: number;
  errors: number;
  maxError: number;
}

/**
 * The `n` names with the most requests over the periods of these summaries
 * (each period counted once), most first, then by name. A name's estimate is
 * the sum of its counts; the exact count is at most the sum of its `over`
 * below it, and at most the sum of the floors of the periods that do not
 * hold it above it: `maxError` is the larger of the two.
 */
export function topNamesOf(summaries: Iterable<TopNames>, n: number, leaveOut: (name: string) => boolean = () => false): TopName[] {
  if (n === 0) return [];
  const sums = new Map<string, { requests: number; errors: number; over: number; floors: number }>();
  let floors = 0;
  for (const summary of summaries) {
    floors += summary.floor;
    for (const [name, e] of summary.entries) {
      let sum = sums.get(name);
      if (!sum) sums.set(name, (sum = { requests: 0, errors: 0, over: 0, floors: 0 }));
      sum.requests += e.count;
      sum.errors += e.errors;
      sum.over += e.over;
      sum.floors += summary.floor;
    }
  }
  // Only the names that can be among the first n are sorted: those with at least the n-th largest estimate.
  const estimates = new Float64Array(sums.size);
  let k = 0;
  for (const [name, s] of sums) if (!leaveOut(name)) estimates[k++] = s.requests;
  const sorted = estimates.subarray(0, k).sort();
  const threshold = k > n ? sorted[k - n]! : -Infinity;
  const top: TopName[] = [];
  for (const [name, s] of sums) {
    if (s.requests < threshold || leaveOut(name)) continue;
    top.push({ name, requests: s.requests, errors: s.errors, maxError: Math.max(s.over, floors - s.floors) });
  }
  return top.sort((a, b) => b.requests - a.requests || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).slice(0, n);
}

/**
 * The (app, request id) keys the database may hold, as a Bloom filter: a
 * write of a request the filter has never seen (most writes: new requests)
 * needs no lookup in ClickHouse, whose check of 1,000 random ids reads most
 * of the key column (they fall in most granules), a cost that grows with the
 * store. The filter answers "maybe" for every key stored (it is loaded from
 * the table on open, told of every key this server writes, and of every key
 * other servers on the database create: key-feed.ts) and for about 1% of
 * the others, which are looked up as before. It never forgets a key (an expired one is a wasted lookup).
 *
 * It grows as a scalable Bloom filter (Almeida et al.): when the newest
 * filter holds its capacity, a new one of twice the capacity is added, and
 * a key may be in any of them.
 *
 * Hand-written (40 lines) rather than a package: the registry's Bloom
 * filters hash with pure-JS 64-bit xxhash over Long objects, microseconds a
 * key, too slow for loading ten million keys on open.
 */
const bitsPerKey = 10;
const hashes = 7;

interface Filter {
  bits: Uint32Array;
  size: number;
  capacity: number;
  count: number;
}

function newFilter(capacity: number): Filter {
  const size = Math.max(64, capacity * bitsPerKey);
  return { bits: new Uint32Array(Math.ceil(size / 32)), size, capacity, count: 0 };
}

/** The two hashes hashKey made last (two numbers, not an array a key: it runs twice for every record written). */
let h1 = 0;
let h2 = 0;

/**
 * Two 32-bit hashes (FNV-1a, and a multiply-xorshift mix) of the UTF-16
 * code units of the key `${app}\u0000${requestId}`, read from its two
 * parts (no key string made), into h1 and h2.
 */
function hashKey(app: string, requestId: string): void {
  let a = 0x811c9dc5;
  let b = 0x9e3779b9;
  // (NUL cannot be in an app id: it ends the app's part of the key.)
  for (let part = 0; part < 3; part++) {
    const text = part === 0 ? app : part === 1 ? "\u0000" : requestId;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul(b ^ c, 0x5bd1e995);
      b ^= b >>> 15;
    }
  }
  b = Math.imul(b ^ (b >>> 13), 0xc2b2ae35);
  h1 = a >>> 0;
  h2 = ((b ^ (b >>> 16)) >>> 0) | 1;
}

export interface KnownKeys {
  add(app: string, requestId: string): void;
  /** False only for a key never added. */
  mayHave(app: string, requestId: string): boolean;
  /** Keys added (with repeats). */
  readonly count: number;
}

export function createKnownKeys(initialCapacity = 1 << 20): KnownKeys {
  const filters: Filter[] = [newFilter(initialCapacity)];
  let count = 0;

  const test = (f: Filter, h1: number, h2: number, set: boolean): boolean => {
    for (let i = 0; i < hashes; i++) {
      const bit = (h1 + Math.imul(i, h2)) >>> 0;
      const at = bit % f.size;
      const mask = 1 << (at & 31);
      if (set) f.bits[at >>> 5]! |= mask;
      else if ((f.bits[at >>> 5]! & mask) === 0) return false;
    }
    return true;
  };

  return {
    add(app, requestId) {
      let f = filters.at(-1)!;
      if (f.count >= f.capacity) filters.push((f = newFilter(f.capacity * 2)));
      hashKey(app, requestId);
      test(f, h1, h2, true);
      f.count++;
      count++;
    },
    mayHave(app, requestId) {
      hashKey(app, requestId);
      for (const f of filters) if (test(f, h1, h2, false)) return true;
      return false;
    },
    get count() {
      return count;
    },
  };
}

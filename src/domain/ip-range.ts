import { isIPv4, isIPv6 } from "node:net";

/**
 * A range of client addresses: an address and how many of its leading bits
 * must match (all of them for a single address). Plain data, so a plan that
 * carries ranges crosses threads as it is.
 */
export interface IpRange {
  family: 4 | 6;
  /** The address's bytes (4 or 16), its bits past `bits` zero. */
  bytes: number[];
  bits: number;
}

/** The eight 16-bit groups of an IPv6 address (a dotted IPv4 tail as two groups); undefined when it is not one. */
export function ipv6Groups(text: string): number[] | undefined {
  if (!isIPv6(text)) return undefined;
  let address = text.replace(/%.*$/, "");
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(address);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split(".").map(Number) as [number, number, number, number];
    address = `${address.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = address.split("::") as [string, string | undefined];
  const parse = (part: string) => (part === "" ? [] : part.split(":").map((g) => parseInt(g, 16)));
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/** Whether IPv6 groups are an IPv4 address mapped into IPv6 (::ffff:1.2.3.4). */
export const isMappedIpv4 = (groups: readonly number[]) => groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff;

/** An address's bytes; an IPv4 address mapped into IPv6 as IPv4; undefined when it is not an address. */
export function ipBytes(text: string): { family: 4 | 6; bytes: number[] } | undefined {
  if (isIPv4(text)) return { family: 4, bytes: text.split(".").map(Number) };
  const groups = ipv6Groups(text);
  if (!groups) return undefined;
  const bytes = groups.flatMap((g) => [g >> 8, g & 0xff]);
  return isMappedIpv4(groups) ? { family: 4, bytes: bytes.slice(12) } : { family: 6, bytes };
}

/** `1.2.3.4`, `2001:db8::1`, `10.0.0.0/8` or `2001:db8::/32` as a range; undefined when it is none of these. */
export function parseIpRange(text: string): IpRange | undefined {
  const slash = text.indexOf("/");
  const address = ipBytes(slash < 0 ? text : text.slice(0, slash));
  if (!address) return undefined;
  const max = address.bytes.length * 8;
  let bits = max;
  if (slash >= 0) {
    const given = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(given) || Number(given) > max) return undefined;
    // A mapped address's prefix counts the 96 bits before its IPv4 part.
    bits = Number(given) - (max === 32 && text.includes(":") ? 96 : 0);
    if (bits < 0) return undefined;
  }
  const bytes = address.bytes.map((b, i) => {
    const keep = Math.max(0, Math.min(8, bits - i * 8));
    return b & (0xff << (8 - keep)) & 0xff;
  });
  return { family: address.family, bytes, bits };
}

/** Whether the address `ip` (as stored: text) lies in any of the ranges; text that is not an address lies in none. */
export function ipInRanges(ip: string, ranges: readonly IpRange[]): boolean {
  const address = ipBytes(ip);
  if (!address) return false;
  return ranges.some((range) => {
    if (range.family !== address.family) return false;
    for (let bit = 0; bit < range.bits; bit += 8) {
      const keep = Math.min(8, range.bits - bit);
      const mask = (0xff << (8 - keep)) & 0xff;
      if ((address.bytes[bit / 8]! & mask) !== range.bytes[bit / 8]) return false;
    }
    return true;
  });
}

/** An IPv4 range's first and last address as 32-bit numbers (for a backend that stores IPv4 addresses as numbers). */
export function ipv4Bounds(range: IpRange): [number, number] {
  const base = range.bytes.reduce((n, b) => n * 256 + b, 0);
  return [base, base + 2 ** (32 - range.bits) - 1];
}

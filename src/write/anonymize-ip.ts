import { isIPv4, isIPv6 } from "node:net";

/** The eight 16-bit groups of an IPv6 address (a dotted IPv4 tail as two groups); undefined when it is not one. */
function ipv6Groups(text: string): number[] | undefined {
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

/** The shortest form of eight groups (RFC 5952: the longest run of two or more zero groups as "::"). */
function formatIpv6(groups: number[]): string {
  let best = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) [best, bestLength] = [i, j - i];
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best < 0) return hex.join(":");
  return `${hex.slice(0, best).join(":")}::${hex.slice(best + bestLength).join(":")}`;
}

/**
 * A client address with its host part zeroed, as GoAccess and web analytics
 * do: the last octet of an IPv4 address (1.2.3.4 → 1.2.3.0), the last 80
 * bits of an IPv6 one (the /48 a site is given is kept); an IPv4 address
 * mapped into IPv6 (::ffff:1.2.3.4) as IPv4. Text that is not an address
 * (a host name, "-") is kept as it is.
 */
export function anonymizeIp(ip: string): string {
  if (isIPv4(ip)) return ip.slice(0, ip.lastIndexOf(".")) + ".0";
  const groups = ipv6Groups(ip);
  if (groups === undefined) return ip;
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return `::ffff:${groups[6]! >> 8}.${groups[6]! & 0xff}.${groups[7]! >> 8}.0`;
  }
  return formatIpv6([...groups.slice(0, 3), 0, 0, 0, 0, 0]);
}

import { isIPv4 } from "node:net";
import { isMappedIpv4, ipv6Groups } from "../domain/ip-range.js";

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
  if (isMappedIpv4(groups)) {
    return `::ffff:${groups[6]! >> 8}.${groups[6]! & 0xff}.${groups[7]! >> 8}.0`;
  }
  return formatIpv6([...groups.slice(0, 3), 0, 0, 0, 0, 0]);
}

import type { IncomingMessage } from "node:http";

/**
 * Which proxies in front of the app to believe about the client's address:
 * `false` (default) none: the address is the connection's peer;
 * `true` all: the first address of X-Forwarded-For;
 * a number n: the n nearest proxies (the peer is the first of them);
 * a function: whether to believe the proxy at `address`, `hop` proxies
 * away from the app (0 is the peer), e.g. a check of your own subnet.
 */
export type TrustProxy = boolean | number | ((address: string, hop: number) => boolean);

/** "::ffff:192.0.2.1" (an IPv4 peer on a dual-stack socket) as "192.0.2.1". */
function plain(address: string): string {
  return address.startsWith("::ffff:") && address.includes(".") ? address.slice(7) : address;
}

/**
 * The client's address: the peer's, or, when the peer is a trusted proxy,
 * the address it forwarded, walking X-Forwarded-For from its last entry
 * (the one the peer added) back for as long as each address is trusted,
 * as Express's "trust proxy" does. A client cannot forge its way in: an
 * address is believed only when it comes from a trusted proxy.
 */
export function clientAddress(req: IncomingMessage, trust: TrustProxy): string {
  const peer = plain(req.socket.remoteAddress ?? "");
  if (trust === false || trust === 0) return peer;
  const header = req.headers["x-forwarded-for"];
  if (!header) return peer;
  const forwarded = (Array.isArray(header) ? header.join(",") : header).split(",");
  const trusts = typeof trust === "function" ? trust : typeof trust === "number" ? (_: string, hop: number) => hop < trust : () => true;
  let address = peer;
  for (let i = forwarded.length - 1, hop = 0; i >= 0; i--, hop++) {
    if (!trusts(address, hop)) break;
    const next = plain(forwarded[i]!.trim());
    if (next === "") break;
    address = next;
  }
  return address;
}

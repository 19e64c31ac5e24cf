import { lookup, Resolver } from "node:dns/promises";
import { isIP } from "node:net";
import { Code, ConnectError, type Transport } from "@connectrpc/connect";

/** One server of a pool: the transport that reaches it, and how to drop its connection. */
export interface PoolMember {
  transport: Transport;
  close(): void;
}

/** Makes a member for a base URL (`servername`: the name its TLS certificate carries, when the URL holds an address). */
export type MemberFactory = (url: string, servername: string | undefined) => PoolMember;

/** How a name of several servers is looked up. */
export interface PoolOptions {
  /**
   * Resolve the lone name even when it is "localhost" (a `dns:` target asks
   * for it), and with this DNS server (HOST or HOST:PORT, the authority of
   * `dns://HOST:PORT/name:port`) instead of the system's resolver.
   */
  dns?: { server?: string };
}

export interface ServerPool {
  /** Calls go to the servers in turn, skipping one that failed a moment ago. */
  readonly transport: Transport;
  close(): void;
}

/** How long a server whose call failed as unreachable is skipped (while another is there). */
const downMs = 2_000;
/** How often a name with several addresses is looked up again. */
const resolveEveryMs = 30_000;

/** A URL's host and port, the host without IPv6 brackets. */
function hostOf(url: string): { host: string; port: string; protocol: string } {
  const parsed = new URL(url);
  return { host: parsed.hostname.replace(/^\[|\]$/g, ""), port: parsed.port, protocol: parsed.protocol };
}

/**
 * The addresses of a name: the system's resolver (getaddrinfo, /etc/hosts
 * first), or a DNS server's A and AAAA records.
 */
function dnsLookup(server: string | undefined): (host: string) => Promise<{ address: string; family: number }[]> {
  if (server === undefined) return (host) => lookup(host, { all: true });
  const resolver = new Resolver({ timeout: 2_000, tries: 2 });
  resolver.setServers([server]);
  return async (host) => {
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
    const addresses = [
      ...(v4.status === "fulfilled" ? v4.value.map((address) => ({ address, family: 4 })) : []),
      ...(v6.status === "fulfilled" ? v6.value.map((address) => ({ address, family: 6 })) : []),
    ];
    if (addresses.length === 0) throw v4.status === "rejected" ? v4.reason : new Error(`${host}: no address`);
    return addresses;
  };
}

/**
 * Several reqlog servers as one transport, gRPC's round_robin done on the
 * client: each call goes to the next server; one whose call failed
 * UNAVAILABLE (refused, reset, shutting down) is skipped for two seconds
 * while others remain. A single name that resolves to several addresses (a
 * DNS name of every server) becomes one member per address, looked up again
 * every 30 s (with a `dns:` target, through its DNS server when it names
 * one, as gRPC's dns resolver does). Calls are not retried here: the
 * batching logger sends a failed batch again, on its next stream, which then
 * goes to another server.
 */
export function createServerPool(urls: readonly string[], member: MemberFactory, options: PoolOptions = {}): ServerPool {
  const members = new Map<string, PoolMember & { downUntil: number; servername: string | undefined }>();
  let order: string[] = [];
  let next = 0;
  let resolvedAt = 0;
  let resolving: Promise<void> | undefined;

  function place(keys: readonly { url: string; servername: string | undefined }[]): void {
    const keep = new Set(keys.map((k) => k.url));
    for (const [url, m] of members) {
      if (!keep.has(url)) {
        m.close();
        members.delete(url);
      }
    }
    for (const { url, servername } of keys) {
      if (!members.has(url)) members.set(url, { ...member(url, servername), downUntil: 0, servername });
    }
    order = keys.map((k) => k.url);
  }

  // A single name (not an address) may stand for several servers: look it up.
  const lone = urls.length === 1 ? hostOf(urls[0]!) : undefined;
  const byName = lone !== undefined && isIP(lone.host) === 0 && (lone.host !== "localhost" || options.dns !== undefined);
  const addressesOf = dnsLookup(options.dns?.server);
  place(urls.map((url) => ({ url, servername: undefined })));

  async function resolve(): Promise<void> {
    if (!byName || Date.now() - resolvedAt < resolveEveryMs) return;
    resolving ??= (async () => {
      try {
        const addresses = await addressesOf(lone!.host);
        resolvedAt = Date.now();
        // One address of the system's resolver: the URL as given. A DNS server's answer is used even when
        // it is one address, as the system may not know the name.
        if (addresses.length > 1 || options.dns?.server !== undefined) {
          place(
            addresses.map((a) => ({
              url: `${lone!.protocol}//${a.family === 6 ? `[${a.address}]` : a.address}:${lone!.port}`,
              servername: lone!.host,
            })),
          );
        } else place([{ url: urls[0]!, servername: undefined }]);
      } catch {
        // Unresolvable now: the URL as given (its call then fails with the resolver's error).
        resolvedAt = Date.now();
      } finally {
        resolving = undefined;
      }
    })();
    await resolving;
  }

  function pick(): string {
    const now = Date.now();
    for (let i = 0; i < order.length; i++) {
      const url = order[(next + i) % order.length]!;
      if (members.get(url)!.downUntil <= now) {
        next = (next + i + 1) % order.length;
        return url;
      }
    }
    // All down: the one that comes back first.
    const url = order.reduce((a, b) => (members.get(a)!.downUntil <= members.get(b)!.downUntil ? a : b));
    next = (order.indexOf(url) + 1) % order.length;
    return url;
  }

  /** Marks the server down when the failure says it could not be reached. */
  function noteFailure(url: string, err: unknown): never {
    if (ConnectError.from(err).code === Code.Unavailable && order.length > 1) {
      const m = members.get(url);
      if (m) m.downUntil = Date.now() + downMs;
    }
    throw err;
  }

  async function* watched<T>(url: string, messages: AsyncIterable<T>): AsyncIterable<T> {
    try {
      yield* messages;
    } catch (err) {
      noteFailure(url, err);
    }
  }

  const transport: Transport = {
    async unary(...args) {
      await resolve();
      const url = pick();
      return members.get(url)!.transport.unary(...args).catch((err: unknown) => noteFailure(url, err));
    },
    async stream(...args) {
      await resolve();
      const url = pick();
      const response = await members.get(url)!.transport.stream(...args).catch((err: unknown) => noteFailure(url, err));
      return { ...response, message: watched(url, response.message) };
    },
  };

  return {
    transport,
    close() {
      for (const m of members.values()) m.close();
    },
  };
}

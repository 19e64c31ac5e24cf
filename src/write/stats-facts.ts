import { routeOf } from "../routes/route-of.js";

/**
 * Longest route, user agent or client IP the stats keep, in code points: a
 * longer one counts under its first 256 (so a bot filter sees those).
 */
export const maxStatsNameLength = 256;

/** What one finished request adds to Stats, the same for every backend. */
export interface StatsFacts {
  route: string;
  /** 1 to 5 for 1xx to 5xx; 0 for a status outside 100..599. */
  statusClass: number;
  /** A server error: status 500 to 599. */
  error: boolean;
  /** µs; a negative latency counts as 0. */
  latencyUs: number;
  /** response_size; a negative one counts as 0. */
  bytes: number;
  ip: string;
  /** "" when the request had none. */
  userAgent: string;
}

/** The fields of a request (a RequestLog, or a stored row read as one) that Stats looks at. */
interface StatsFields {
  urlMapEntry: string;
  resource: string;
  status: number;
  latency: bigint;
  responseSize: bigint;
  ip: string;
  userAgent?: string | null;
}

export function statusClassOf(status: number): number {
  return status >= 100 && status <= 599 ? Math.floor(status / 100) : 0;
}

function cut(text: string): string {
  // Fewer UTF-16 units than the bound: fewer code points too.
  return text.length <= maxStatsNameLength ? text : Array.from(text).slice(0, maxStatsNameLength).join("");
}

const nonNegative = (n: bigint) => (n > 0n ? Number(n) : 0);

export function statsFactsOf(request: StatsFields): StatsFacts {
  const statusClass = statusClassOf(request.status);
  return {
    route: cut(routeOf(request)),
    statusClass,
    error: statusClass === 5,
    latencyUs: nonNegative(request.latency),
    bytes: nonNegative(request.responseSize),
    ip: cut(request.ip),
    userAgent: cut(request.userAgent ?? ""),
  };
}

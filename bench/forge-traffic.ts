import { create } from "@bufbuild/protobuf";
import { LogLineSchema, type RequestLog, RequestLogSchema } from "../gen/reqlog/v1/log_service_pb.js";
import { routeOf } from "../src/routes/route-of.js";

/** mulberry32: a small, fast, seeded PRNG, so a data set is the same on every run. */
export function createRandom(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!,
  };
}

type Random = ReturnType<typeof createRandom>;

interface Route {
  weight: number;
  method: string;
  path: (r: Random) => string;
  /** Status, with the app lines that request would write. */
  outcome: (r: Random) => { status: number; size: number; lines: [number, string][] };
}

const owners = ["alice", "bob", "carol", "forgejo", "infra", "docs", "ci-bot", "mirror"];
const repos = ["app", "website", "cli", "sdk", "infra", "charts", "proto", "wiki", "tools", "api"];
const repo = (r: Random) => `${r.pick(owners)}/${r.pick(repos)}`;

/**
 * Routes of the forge's API (seeds/forge-http-api.md) with the statuses and
 * messages that doc names: artifact zips answering 302 to their raw route,
 * signed-URL failures 401, "Stars are disabled." 403, missing webhooks 404.
 */
const routes: Route[] = [
  {
    weight: 20,
    method: "GET",
    path: (r) => `/api/v1/repos/${repo(r)}/commits?stat=${r.pick(["true", "false"])}&files=false&limit=${r.pick([10, 30, 50])}`,
    outcome: (r) => ({ status: 200, size: 2000 + r.int(60000), lines: [[1, "listing commits"]] }),
  },
  {
    weight: 12,
    method: "GET",
    path: (r) => `/api/v1/repos/${repo(r)}/actions/artifacts/${1 + r.int(90000)}/zip`,
    outcome: () => ({ status: 302, size: 0, lines: [[1, "redirecting artifact download to its raw route"]] }),
  },
  {
    weight: 10,
    method: "GET",
    path: (r) => `/api/v1/repos/${repo(r)}/actions/artifacts/${1 + r.int(90000)}/zip/raw?sig=${r.int(1e9).toString(16)}`,
    outcome: (r) =>
      r.next() < 0.15
        ? { status: 401, size: 12, lines: [[2, r.pick(["signed URL expired", "signed URL signature invalid", "artifact id does not match signature"])]] }
        : { status: 200, size: 100000 + r.int(5_000_000), lines: [[0, "serving artifact from object storage"]] },
  },
  {
    weight: 6,
    method: "PUT",
    path: (r) => `/api/v1/user/starred/${repo(r)}`,
    outcome: () => ({ status: 403, size: 21, lines: [[2, "Stars are disabled."]] }),
  },
  {
    weight: 5,
    method: "GET",
    path: (r) => `/api/v1/admin/hooks/${1 + r.int(400)}`,
    outcome: (r) => (r.next() < 0.3 ? { status: 404, size: 9, lines: [[1, "webhook not found"]] } : { status: 200, size: 700, lines: [] }),
  },
  {
    weight: 2,
    method: "POST",
    path: () => "/api/v1/admin/hooks",
    outcome: () => ({ status: 201, size: 650, lines: [[1, "created system webhook"]] }),
  },
  {
    weight: 8,
    method: "GET",
    path: (r) => `/api/v1/teams/${1 + r.int(300)}`,
    outcome: () => ({ status: 200, size: 900, lines: [] }),
  },
  {
    weight: 5,
    method: "POST",
    path: (r) => `/api/v1/repos/${repo(r)}/branches`,
    outcome: (r) =>
      r.next() < 0.2
        ? { status: 403, size: 60, lines: [[3, "cannot create branch: repository is archived"]] }
        : { status: 201, size: 400, lines: [[1, "created branch from old_ref_name"]] },
  },
  {
    weight: 6,
    method: "GET",
    path: (r) => `/api/v1/repos/${repo(r)}/compare/${r.pick(["main", "v1.2.0", "a1b2c3d"])}...${r.pick(["dev", "feature/x", "e4f5a6b"])}`,
    outcome: (r) => ({ status: 200, size: 5000 + r.int(90000), lines: [[0, "comparing refs"]] }),
  },
  {
    weight: 3,
    method: "POST",
    path: (r) => `/api/v1/repos/${repo(r)}/forks`,
    outcome: (r) =>
      r.next() < 0.25
        ? { status: 409, size: 40, lines: [[2, "repository is already forked by user"]] }
        : { status: 202, size: 1200, lines: [[1, "fork scheduled"]] },
  },
  {
    weight: 4,
    method: "GET",
    path: (r) => `/api/v1/repos/${repo(r)}/actions/runs/${1 + r.int(500000)}/artifacts`,
    outcome: () => ({ status: 200, size: 1500, lines: [] }),
  },
  {
    weight: 3,
    method: "POST",
    path: (r) => `/api/v1/repos/${repo(r)}/issues/${1 + r.int(3000)}/labels`,
    outcome: (r) =>
      r.next() < 0.1
        ? { status: 403, size: 30, lines: [[3, "label update refused: no write permission"]] }
        : { status: 200, size: 300, lines: [[1, "labels added (organization labels included)"]] },
  },
  {
    weight: 2,
    method: "POST",
    path: (r) => `/api/v1/repos/${repo(r)}/push_mirrors`,
    outcome: () => ({ status: 200, size: 200, lines: [[1, "push mirror created"]] }),
  },
  {
    weight: 4,
    method: "GET",
    path: (r) => r.pick(["/api/v1/label/templates", "/api/v1/gitignore/templates", "/api/v1/licenses"]),
    outcome: () => ({ status: 200, size: 4000, lines: [] }),
  },
  {
    weight: 1,
    method: "POST",
    path: (r) => `/api/v1/orgs/${r.pick(owners)}/rename`,
    outcome: (r) => ({ status: 204, size: 0, lines: [[2, "organization renamed"], [0, `redirect kept for ${r.pick(owners)}`]] }),
  },
  {
    weight: 1,
    method: "GET",
    path: (r) => `/api/v1/repos/${repo(r)}/raw/${r.pick(["README.md", "go.mod", "package.json"])}`,
    outcome: () => ({ status: 500, size: 0, lines: [[4, "gitea: object storage unreachable"], [3, "retry budget exhausted"]] }),
  },
];

const totalWeight = routes.reduce((s, r) => s + r.weight, 0);
const agents = ["git/2.39.5", "curl/8.5.0", "Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0", "tea/0.9.2", "forgejo-runner/6.0.1", "Go-http-client/2.0"];
const hosts = ["forge.example", "code.forge.example", "dl.forge.example"];

function pickRoute(r: Random): Route {
  let x = r.next() * totalWeight;
  for (const route of routes) {
    x -= route.weight;
    if (x < 0) return route;
  }
  return routes[0]!;
}

export interface TrafficOptions {
  seed: number;
  /** First request's start time, µs. */
  startUsec: bigint;
  /** Mean gap between request starts, µs. */
  gapUsec: number;
  /** How many requests the traffic has in all. */
  total: number;
  /**
   * Requests still in progress: drawn from the last `inProgressWindow`
   * requests only (as on a live server, where only the newest few have not
   * ended), each with probability 1/2.
   */
  inProgressWindow?: number;
}

/**
 * Forge traffic: request records in start-time order, several apps, modules
 * and versions, a few app lines per request, some requests in progress.
 * The same seed gives the same records.
 */
export function* forgeTraffic(options: TrafficOptions): Generator<RequestLog> {
  const r = createRandom(options.seed);
  let start = options.startUsec;
  const liveFrom = options.total - (options.inProgressWindow ?? 200);
  for (let i = 0; i < options.total; i++) {
    start += BigInt(1 + r.int(options.gapUsec * 2));
    const route = pickRoute(r);
    const path = route.path(r);
    const outcome = route.outcome(r);
    const latency = BigInt(200 + r.int(r.next() < 0.05 ? 5_000_000 : 150_000));
    const finished = i < liveFrom || r.next() < 0.5;
    const app = r.next() < 0.85 ? "forge" : r.pick(["forge-staging", "pages"]);
    yield create(RequestLogSchema, {
      appId: app,
      moduleId: r.pick(["default", "default", "api", "git"]),
      versionId: r.pick(["v41", "v42", "v42", "v43"]),
      requestId: new TextEncoder().encode(`${options.seed.toString(36)}-${i.toString(36)}`),
      ip: `${10 + r.int(200)}.${r.int(256)}.${r.int(256)}.${1 + r.int(254)}`,
      startTime: start,
      // Every required field set, so strict clients can send the records as they are
      // (0 and "" ask the server to derive: an in-progress request has no end yet).
      endTime: finished ? start + latency : 0n,
      latency: finished ? latency : 0n,
      urlMapEntry: "",
      combined: "",
      mcycles: BigInt(r.int(5000)),
      method: route.method,
      resource: path,
      httpVersion: r.pick(["HTTP/1.1", "HTTP/2.0"]),
      status: outcome.status,
      responseSize: BigInt(outcome.size),
      ...(r.next() < 0.3 ? { referrer: `https://${r.pick(hosts)}/${repo(r)}` } : {}),
      userAgent: r.pick(agents),
      host: r.pick(hosts),
      finished,
      replicaIndex: r.int(4),
      line: outcome.lines.map(([level, message], k) =>
        create(LogLineSchema, { time: start + BigInt(100 * (k + 1)), level, logMessage: message }),
      ),
    });
  }
}

/**
 * The handler pattern the forge would log as url_map_entry for a request
 * path: its template in the forge's route table, else its path with ids
 * collapsed.
 */
export function handlerRoute(resource: string): string {
  return routeOf({ urlMapEntry: "", resource });
}

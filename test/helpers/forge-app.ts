/**
 * A small HTTP app answering like the forge's API (seeds/forge-http-api.md)
 * behind a test's nginx, and a client sending it forge-shaped requests and
 * recording what each got back, so a test can compare the access log's
 * records with what really happened.
 */
import { Agent, createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createRandom } from "../../bench/forge-traffic.js";

export interface ForgeApp {
  /** http://127.0.0.1:PORT */
  url: string;
  close(): Promise<void>;
}

/** The forge's answers: artifact zips redirect to their raw route, stars are disabled, missing hooks are 404. */
function answer(method: string, path: string): { status: number; body: string; headers?: Record<string, string> } {
  const url = new URL(path, "http://forge.test");
  const p = url.pathname;
  if (/^\/api\/v1\/repos\/[^/]+\/[^/]+\/actions\/artifacts\/\d+\/zip$/.test(p)) {
    return { status: 302, body: "", headers: { location: `${p}/raw?sig=abc` } };
  }
  if (/\/actions\/artifacts\/\d+\/zip\/raw$/.test(p)) {
    return url.searchParams.get("sig") === "expired" ? { status: 401, body: '{"message":"signed URL expired"}' } : { status: 200, body: "PK".padEnd(700, "z") };
  }
  if (method === "PUT" && /^\/api\/v1\/user\/starred\/[^/]+\/[^/]+$/.test(p)) return { status: 403, body: '{"message":"Stars are disabled."}' };
  const hook = /^\/api\/v1\/admin\/hooks\/(\d+)$/.exec(p);
  if (hook) return Number(hook[1]) > 300 ? { status: 404, body: '{"message":"webhook not found"}' } : { status: 200, body: `{"id":${hook[1]},"type":"forgejo","active":true}` };
  if (method === "POST" && p === "/api/v1/admin/hooks") return { status: 201, body: '{"id":77}' };
  if (/^\/api\/v1\/repos\/[^/]+\/[^/]+\/commits$/.test(p)) {
    const limit = Number(url.searchParams.get("limit") ?? 10);
    return { status: 200, body: JSON.stringify(Array.from({ length: limit }, (_, i) => ({ sha: i.toString(16).padStart(40, "0") }))) };
  }
  if (p.startsWith("/api/v1/")) return { status: 200, body: "{}" };
  return { status: 404, body: "not found" };
}

/** Starts the app on 127.0.0.1:0; `?delay=MS` makes an answer wait (for $request_time). */
export async function startForgeApp(): Promise<ForgeApp> {
  const server: Server = createServer((req, res) => {
    req.resume();
    req.once("end", () => {
      const { status, body, headers } = answer(req.method ?? "GET", req.url ?? "/");
      const delay = Number(new URL(req.url ?? "/", "http://x").searchParams.get("delay") ?? 0);
      setTimeout(() => {
        res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...headers });
        res.end(body);
      }, delay);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** One request a test sent, and what came back. */
export interface SentRequest {
  method: string;
  path: string;
  userAgent: string;
  referer?: string;
  status: number;
  /** Response body bytes received (nginx's $body_bytes_sent). */
  bodyBytes: number;
}

const agents = [
  "git/2.43.0",
  "Go-http-client/1.1",
  "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
  'curl/8.5.0 "quoted" \\ backslash',
  "Forgejo-Runner/6.0 café",
];
const owners = ["alice", "bob", "infra"];
const repos = ["app", "website", "cli"];

/** The i-th forge-shaped request of a seeded run; `tag` makes every path unique (a test can count them). */
export function forgeRequest(seed: number, i: number, tag: string): Omit<SentRequest, "status" | "bodyBytes"> {
  const r = createRandom(seed * 100_003 + i);
  const repo = `${r.pick(owners)}/${r.pick(repos)}`;
  // Every path unique; a tenth of the requests take 30 ms (a latency to see in $request_time).
  const unique = `t=${tag}-${i}${r.next() < 0.1 ? "&delay=30" : ""}`;
  const kind = r.int(7);
  const [method, path] =
    kind === 0
      ? ["GET", `/api/v1/repos/${repo}/commits?limit=${r.pick([1, 5, 10])}&${unique}`]
      : kind === 1
        ? ["GET", `/api/v1/repos/${repo}/actions/artifacts/${1 + r.int(900)}/zip?${unique}`]
        : kind === 2
          ? ["GET", `/api/v1/repos/${repo}/actions/artifacts/${1 + r.int(900)}/zip/raw?sig=${r.pick(["ok", "expired"])}&${unique}`]
          : kind === 3
            ? ["PUT", `/api/v1/user/starred/${repo}?${unique}`]
            : kind === 4
              ? ["GET", `/api/v1/admin/hooks/${1 + r.int(400)}?${unique}`]
              : kind === 5
                ? ["POST", `/api/v1/admin/hooks?${unique}`]
                : ["GET", `/api/v1/teams/${1 + r.int(50)}/members?${unique}`];
  return {
    method,
    path,
    userAgent: r.pick(agents),
    ...(r.next() < 0.5 ? { referer: `https://forge.test/${repo}` } : {}),
  };
}

const agent = new Agent({ keepAlive: true, maxSockets: 8 });

/** Sends one request and records its status and body size. */
export function send(base: string, req: Omit<SentRequest, "status" | "bodyBytes">): Promise<SentRequest> {
  return new Promise((resolve, reject) => {
    const url = new URL(req.path, base);
    // Header values go out as bytes: latin1 of the UTF-8 sends the UTF-8 (as browsers send it).
    const bytes = (text: string) => Buffer.from(text, "utf8").toString("latin1");
    const headers: Record<string, string> = { "user-agent": bytes(req.userAgent), host: "forge.test" };
    if (req.referer) headers.referer = bytes(req.referer);
    const r = request(url, { method: req.method, headers, agent }, (res) => {
      let bodyBytes = 0;
      res.on("data", (c: Buffer) => (bodyBytes += c.length));
      res.once("end", () => resolve({ ...req, status: res.statusCode ?? 0, bodyBytes }));
    });
    r.once("error", reject);
    // A Buffer: with a string body Node writes the header block in the body's encoding (UTF-8), not latin1.
    r.end(req.method === "POST" ? Buffer.from('{"type":"forgejo"}') : undefined);
  });
}

/** Sends requests `from` … `to - 1` of a seeded run, `concurrency` at a time. */
export async function sendMany(base: string, seed: number, tag: string, from: number, to: number, concurrency = 4): Promise<SentRequest[]> {
  const results: SentRequest[] = [];
  let next = from;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < to) {
        const i = next++;
        results[i - from] = await send(base, forgeRequest(seed, i, tag));
      }
    }),
  );
  return results;
}

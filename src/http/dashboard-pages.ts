import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { extname, join } from "node:path";
import { gzipSync } from "node:zlib";
import { packageRoot } from "../package-root.js";
import type { HttpRequest, HttpResponse, PageHandler } from "./http-server.js";

const contentTypes: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".txt": "text/plain; charset=utf-8",
};

/** Asset names carry a content hash (esbuild's `[name]-[hash]`): a changed file is a new URL, so browsers may keep one forever. */
const immutable = "public, max-age=31536000, immutable";
/** The page itself is revalidated on every load (a cheap 304), so a new build is picked up at once. */
const revalidate = "no-cache";

/**
 * The page may talk to its own origin only; uPlot sizes its canvas with
 * inline styles, hence 'unsafe-inline' for styles (not scripts).
 */
const securityHeaders = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

interface Asset {
  body: Buffer;
  /** The body gzipped, when that saves space. */
  gzipped: Buffer | undefined;
  etag: string;
  headers: Record<string, string>;
}

function loadAsset(path: string, cacheControl: string): Asset {
  const body = readFileSync(path);
  const type = contentTypes[extname(path)] ?? "application/octet-stream";
  const compressible = type.startsWith("text/") || type.startsWith("application/json") || type === "image/svg+xml";
  const zipped = compressible && body.length > 1024 ? gzipSync(body, { level: 9 }) : undefined;
  return {
    body,
    gzipped: zipped && zipped.length < body.length ? zipped : undefined,
    etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`,
    headers: { "content-type": type, "cache-control": cacheControl, ...securityHeaders },
  };
}

/** Where `npm run build` writes the dashboard (index.html and assets/). */
function defaultDashboardDir(): string {
  return join(packageRoot(), "dist", "web");
}

/** The URL paths the dashboard answers, each with its file: `/` and `/assets/<file>`. */
function loadDashboard(dir: string): Map<string, Asset> | undefined {
  if (!existsSync(join(dir, "index.html"))) return undefined;
  const assets = new Map<string, Asset>([["/", loadAsset(join(dir, "index.html"), revalidate)]]);
  const assetDir = join(dir, "assets");
  if (existsSync(assetDir)) {
    for (const entry of readdirSync(assetDir, { withFileTypes: true })) {
      if (entry.isFile()) assets.set(`/assets/${entry.name}`, loadAsset(join(assetDir, entry.name), immutable));
    }
  }
  return assets;
}

function send(request: HttpRequest, response: HttpResponse, asset: Asset): void {
  const headers: Record<string, string> = { ...asset.headers, etag: asset.etag, vary: "accept-encoding" };
  if (request.headers["if-none-match"] === asset.etag) {
    response.writeHead(304, headers);
    response.end();
    return;
  }
  const gzip = asset.gzipped !== undefined && /\bgzip\b/.test(String(request.headers["accept-encoding"] ?? ""));
  const body = gzip ? asset.gzipped! : asset.body;
  if (gzip) headers["content-encoding"] = "gzip";
  headers["content-length"] = String(body.length);
  response.writeHead(200, headers);
  if (request.method === "HEAD") response.end();
  else response.end(body);
}

/**
 * The dashboard's static files on the HTTP port: `/` (whatever its query
 * string, which holds the view) and `/assets/*`. The files are read once,
 * when the handler is made, and served from memory by exact path, so no URL
 * can reach a file outside the build (no path traversal); other paths under
 * `/assets/` are 404. Without a build (`npm run build` not run) `/` says so.
 */
export function dashboardPages(dir: string = defaultDashboardDir()): PageHandler {
  const assets = loadDashboard(dir);
  return (request, response) => {
    // The path as sent, not resolved: only the exact paths of the build match.
    const path = (request.url ?? "/").split("?", 1)[0]!;
    const asset = assets?.get(path);
    if (path !== "/" && asset === undefined) return false;
    if (request.method !== "GET" && request.method !== "HEAD") {
      response.writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain; charset=utf-8" });
      response.end(`method ${request.method} not allowed: the dashboard's pages take GET and HEAD\n`);
      return true;
    }
    if (asset === undefined) {
      response.writeHead(503, { "content-type": "text/plain; charset=utf-8", "cache-control": revalidate });
      response.end(`the dashboard is not built: run npm run build (looked in ${dir})\n`);
      return true;
    }
    send(request, response, asset);
    return true;
  };
}

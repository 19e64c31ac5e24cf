import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/logger.js";
import { dashboardPages } from "../../src/http/dashboard-pages.js";
import { type RunningHttpServer, startHttpServer } from "../../src/http/http-server.js";

interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** A request with the path sent exactly as written (fetch would resolve `..` and re-encode it first). */
function raw(port: number, path: string, init: { method?: string; headers?: Record<string, string> } = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, method: init.method ?? "GET", headers: init.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** A small build as `npm run build` lays it out, beside a file that must never be served. */
const root = mkdtempSync(join(tmpdir(), "reqlog-dashboard-pages-"));
const build = join(root, "web");
const script = `console.log(${JSON.stringify("x".repeat(4000))});\n`;
let server: RunningHttpServer;
let bare: RunningHttpServer;

async function serve(dir: string): Promise<RunningHttpServer> {
  return startHttpServer({
    listen: "127.0.0.1:0",
    routes: () => {},
    pages: [dashboardPages(dir)],
    readMaxBytes: 1 << 20,
    logger: createLogger("silent"),
  });
}

beforeAll(async () => {
  mkdirSync(join(build, "assets"), { recursive: true });
  writeFileSync(join(build, "index.html"), '<!doctype html><script type="module" src="/assets/main-ABC123.js"></script>');
  writeFileSync(join(build, "assets", "main-ABC123.js"), script);
  writeFileSync(join(build, "assets", "main-ABC123.css"), "body{margin:0}");
  writeFileSync(join(root, "secret.txt"), "not for the web");
  server = await serve(build);
  bare = await serve(join(root, "not-built"));
});

afterAll(async () => {
  await Promise.all([server.close(1000), bare.close(1000)]);
  rmSync(root, { recursive: true, force: true });
});

describe("the dashboard's pages", () => {
  it("serves the page at / whatever the query string, revalidated on each load, with a content security policy", async () => {
    for (const path of ["/", "/?app=forge&view=requests&regex=%22GET"]) {
      const res = await raw(server.port, path);
      expect(res.status).toBe(200);
      expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
      expect(res.headers["cache-control"]).toBe("no-cache");
      expect(res.headers["content-security-policy"]).toContain("default-src 'self'");
      expect(res.headers["x-content-type-options"]).toBe("nosniff");
      expect(res.body.toString()).toContain("/assets/main-ABC123.js");
    }
  });

  it("answers 304 to a revalidation of an unchanged page", async () => {
    const first = await raw(server.port, "/");
    const again = await raw(server.port, "/", { headers: { "if-none-match": String(first.headers.etag) } });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
  });

  it("serves hashed assets with their content types, cached for good, gzipped when the client takes it", async () => {
    const js = await raw(server.port, "/assets/main-ABC123.js", { headers: { "accept-encoding": "gzip, deflate" } });
    expect(js.status).toBe(200);
    expect(js.headers["content-type"]).toBe("text/javascript; charset=utf-8");
    expect(js.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    expect(js.headers["content-encoding"]).toBe("gzip");
    expect(gunzipSync(js.body).toString()).toBe(script);
    const css = await raw(server.port, "/assets/main-ABC123.css");
    expect(css.headers["content-type"]).toBe("text/css; charset=utf-8");
    expect(css.headers["content-encoding"]).toBeUndefined();
    expect(css.body.toString()).toBe("body{margin:0}");
  });

  it("answers HEAD with the headers only", async () => {
    const res = await raw(server.port, "/assets/main-ABC123.js", { method: "HEAD" });
    expect(res.status).toBe(200);
    expect(res.headers["content-length"]).toBe(String(Buffer.byteLength(script)));
    expect(res.body.length).toBe(0);
  });

  it("answers 404 for unknown assets and for every path that tries to climb out of the build", async () => {
    const paths = [
      "/assets/main-OTHER.js",
      "/assets/",
      "/index.html",
      "/assets/../index.html",
      "/assets/../../secret.txt",
      "/assets/%2e%2e/%2e%2e/secret.txt",
      "/assets/..%2f..%2fsecret.txt",
      "/assets/%2E%2E%5Csecret.txt",
      "/../secret.txt",
      "//secret.txt",
      "/secret.txt",
    ];
    for (const path of paths) {
      const res = await raw(server.port, path);
      expect({ path, status: res.status }).toEqual({ path, status: 404 });
      expect(res.body.toString()).not.toContain("not for the web");
    }
  });

  it("refuses other methods than GET and HEAD with 405", async () => {
    const res = await raw(server.port, "/", { method: "POST" });
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe("GET, HEAD");
  });

  it("says how to build the dashboard when it is not built", async () => {
    const res = await raw(bare.port, "/");
    expect(res.status).toBe(503);
    expect(res.body.toString()).toContain("the dashboard is not built: run npm run build");
    expect((await raw(bare.port, "/assets/main-ABC123.js")).status).toBe(404);
  });
});

import { createUrlSigner } from "./signed-url.js";

/** One request of the traffic and the status the forge must answer it with. */
export interface Exchange {
  method: string;
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
  expect: number;
  /** Check more of the answer (a message, a header); returns what is wrong. */
  check?: (res: Response, body: string) => string | undefined;
}

export interface TrafficResult {
  sent: number;
  /** "METHOD path: expected X, got Y …" for every answer that was not what the forge should answer. */
  wrong: string[];
  /** Requests per status. */
  statuses: Map<number, number>;
}

const json = (body: string) => {
  try {
    return JSON.parse(body) as Record<string, unknown>;
  } catch {
    return {};
  }
};
const message = (expected: string) => (_res: Response, body: string) =>
  json(body).message === expected ? undefined : `message ${JSON.stringify(json(body).message)}, not ${JSON.stringify(expected)}`;

async function send(base: string, exchange: Exchange): Promise<{ res: Response; body: string }> {
  const res = await fetch(base + exchange.path, {
    method: exchange.method,
    redirect: "manual",
    headers: { "user-agent": "forge-traffic/1.0", ...(exchange.body ? { "content-type": "application/json" } : {}), ...exchange.headers },
    body: exchange.body === undefined ? undefined : JSON.stringify(exchange.body),
  });
  return { res, body: await res.text() };
}

/**
 * The traffic script's requests: each behaviour of the example forge app
 * once (webhooks of both kinds and the `type` rules, a missing hook's 404,
 * a team, an artifact's 302 to its signed raw route and the 401s of a bad,
 * altered and expired signature, the 403 of disabled stars), then `extra`
 * more of the same kinds. `signingKey` is the app's, to make an expired URL.
 */
export async function runForgeTraffic(base: string, options: { signingKey: string; extra?: number }): Promise<TrafficResult> {
  const result: TrafficResult = { sent: 0, wrong: [], statuses: new Map() };
  const run = async (exchange: Exchange) => {
    const { res, body } = await send(base, exchange);
    result.sent++;
    result.statuses.set(res.status, (result.statuses.get(res.status) ?? 0) + 1);
    const problem = res.status !== exchange.expect ? `status ${res.status}, not ${exchange.expect}` : exchange.check?.(res, body);
    if (problem) result.wrong.push(`${exchange.method} ${exchange.path}: ${problem}`);
    return { res, body };
  };
  const api = "/api/v1";
  const hook = (isSystem: boolean | undefined, url: string) => ({
    type: "forgejo",
    active: true,
    branch_filter: "*",
    events: ["create", "push"],
    config: { url, content_type: "json", secret: "<SIGNING_SECRET>", ...(isSystem === undefined ? {} : { is_system_webhook: isSystem }) },
  });
  const kindOf = (body: string) => (json(body).config as { is_system_webhook?: boolean } | undefined)?.is_system_webhook;
  const idOf = (body: string) => Number(json(body).id);

  // Admin webhooks.
  const system = await run({
    method: "POST", path: `${api}/admin/hooks`, body: hook(true, "https://ci.example/hook"), expect: 201,
    check: (_r, b) => (kindOf(b) === true ? undefined : "not a system webhook"),
  });
  await run({
    method: "POST", path: `${api}/admin/hooks`, body: hook(undefined, "https://chat.example/hook"), expect: 201,
    check: (_r, b) => (kindOf(b) === false ? undefined : "not a default webhook"),
  });
  await run({ method: "POST", path: `${api}/admin/hooks`, body: { type: "forgejo", config: {} }, expect: 422, check: message("config.url must be an http(s) URL") });
  const onlySystem = (_r: Response, b: string) => {
    const list = JSON.parse(b) as { config: { is_system_webhook: boolean } }[];
    return list.length > 0 && list.every((h) => h.config.is_system_webhook) ? undefined : "not only system webhooks";
  };
  await run({ method: "GET", path: `${api}/admin/hooks`, expect: 200, check: onlySystem });
  await run({ method: "GET", path: `${api}/admin/hooks?type=system`, expect: 200, check: onlySystem });
  await run({
    method: "GET", path: `${api}/admin/hooks?type=default`, expect: 200,
    check: (_r, b) => ((JSON.parse(b) as { config: { is_system_webhook: boolean } }[]).every((h) => !h.config.is_system_webhook) ? undefined : "a system webhook among default ones"),
  });
  await run({ method: "GET", path: `${api}/admin/hooks?type=all`, expect: 200 });
  await run({ method: "GET", path: `${api}/admin/hooks?type=everything`, expect: 422 });
  const id = idOf(system.body);
  await run({ method: "GET", path: `${api}/admin/hooks/${id}`, expect: 200 });
  await run({ method: "PATCH", path: `${api}/admin/hooks/${id}`, body: { active: false }, expect: 200, check: (_r, b) => (json(b).active === false ? undefined : "still active") });
  await run({ method: "DELETE", path: `${api}/admin/hooks/${id}`, expect: 204 });
  await run({ method: "GET", path: `${api}/admin/hooks/${id}`, expect: 404, check: message("webhook not found") });
  await run({ method: "PATCH", path: `${api}/admin/hooks/99999`, body: { active: true }, expect: 404 });
  await run({ method: "DELETE", path: `${api}/admin/hooks/99999`, expect: 404 });

  // Teams.
  await run({
    method: "GET", path: `${api}/teams/1`, expect: 200,
    check: (_r, b) => ((json(b).organization as { name?: string } | undefined)?.name === "infra" ? undefined : "no organization member"),
  });
  await run({ method: "GET", path: `${api}/teams/404`, expect: 404 });

  // Artifacts: the zip route's 302 to a signed raw route, and its 401s.
  const repo = `${api}/repos/alice/app/actions`;
  await run({ method: "GET", path: `${repo}/runs/7001/artifacts`, expect: 200 });
  await run({ method: "GET", path: `${repo}/artifacts/1`, expect: 200 });
  const zip = await run({ method: "GET", path: `${repo}/artifacts/1/zip`, expect: 302 });
  const raw = zip.res.headers.get("location") ?? "";
  await run({
    method: "GET", path: raw, expect: 200,
    check: (r) => (r.headers.get("content-type") === "application/zip" ? undefined : `content-type ${r.headers.get("content-type")}`),
  });
  await run({ method: "GET", path: raw.replace(/sig=./, (s) => (s.endsWith("A") ? "sig=B" : "sig=A")), expect: 401, check: message("signed URL signature is invalid") });
  await run({ method: "GET", path: raw.replace("/artifacts/1/", "/artifacts/2/"), expect: 401, check: message("signed URL signature is invalid") });
  const expired = createUrlSigner(options.signingKey, () => Date.now() - 2 * 60 * 60 * 1000).sign("1");
  await run({ method: "GET", path: `${repo}/artifacts/1/zip/raw?${expired}`, expect: 401, check: message("signed URL expired") });
  await run({ method: "GET", path: `${repo}/artifacts/1/zip/raw`, expect: 401 });
  await run({ method: "GET", path: `${repo}/artifacts/77/zip`, expect: 404 });

  // Stars, disabled on this instance.
  await run({ method: "PUT", path: `${api}/user/starred/alice/app`, expect: 403, check: message("Stars are disabled.") });
  await run({ method: "GET", path: `${api}/repos/alice/app/stargazers`, expect: 403, check: message("Stars are disabled.") });

  // More of the same, a few at a time, with request ids of the caller's own on some.
  const kinds: ((i: number) => Exchange)[] = [
    (i) => ({ method: "GET", path: `${api}/teams/${1 + (i % 3)}`, expect: i % 3 === 2 ? 404 : 200 }),
    (i) => ({ method: "GET", path: `${api}/admin/hooks/${1000 + i}`, expect: 404 }),
    (i) => ({ method: "PUT", path: `${api}/user/starred/alice/repo-${i}`, expect: 403 }),
    () => ({ method: "GET", path: `${repo}/artifacts/2/zip`, expect: 302 }),
    (i) => ({ method: "GET", path: `${repo}/artifacts/1/zip/raw?expires=1&sig=x${i}`, expect: 401 }),
    (i) => ({ method: "GET", path: `${api}/admin/hooks?type=${i % 2 ? "default" : "all"}`, expect: 200, headers: { "x-request-id": `traffic-${Date.now()}-${i}` } }),
  ];
  const extra = options.extra ?? 100;
  for (let i = 0; i < extra; i += 4) {
    await Promise.all(Array.from({ length: Math.min(4, extra - i) }, (_, j) => run(kinds[(i + j) % kinds.length]!(i + j))));
  }
  return result;
}

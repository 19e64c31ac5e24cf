import { type Scope, scopes, type TokenInfo, type TokenStore } from "../store/store.js";
import { checkIdentifier } from "../write/identifiers.js";
import { openBackend, type StoreChoice } from "./open-backend.js";

async function withTokens<T>(choice: StoreChoice, work: (tokens: TokenStore) => Promise<T>): Promise<T> {
  const backend = await openBackend({ ...choice, readWorkers: 0 });
  try {
    return await work(backend.tokens);
  } finally {
    await backend.close();
  }
}

/** Checks scope names; returns them typed. */
export function parseScopes(given: string[]): Scope[] {
  if (given.length === 0) throw new Error(`give at least one --scope (${scopes.join(", ")})`);
  for (const s of given) {
    if (!(scopes as readonly string[]).includes(s)) throw new Error(`--scope: "${s}" is not one of ${scopes.join(", ")}`);
  }
  return given as Scope[];
}

/** `reqlog token create`: the new token alone on stdout (it is shown only this once). */
export function createTokenCommand(options: StoreChoice & { scope: string[]; app: string[]; name?: string }): Promise<string> {
  const chosen = parseScopes(options.scope);
  for (const app of options.app) checkIdentifier(app, "--app");
  return withTokens(options, async (tokens) => {
    const name = options.name ?? `${chosen.join("+")}${options.app.length ? ` for ${options.app.join(",")}` : ""}`;
    const apps = options.app.length > 0 ? options.app : undefined; // no --app: every app
    return (await tokens.create({ name, scopes: chosen, apps })).token;
  });
}

function describe(t: TokenInfo): string {
  const when = (usec: bigint) => new Date(Number(usec / 1000n)).toISOString().replace(/\.\d+Z$/, "Z");
  return [
    String(t.id).padStart(4),
    t.revoked === undefined ? "active " : "revoked",
    t.scopes.join(",").padEnd(20),
    (t.apps?.join(",") ?? "(all apps)").padEnd(20),
    when(t.created),
    t.name,
  ].join("  ");
}

/** `reqlog token list`: every token's id, state, scopes, apps, creation time and name (never the token). */
export function listTokensCommand(options: StoreChoice): Promise<string> {
  return withTokens(options, async (tokens) => {
    const all = await tokens.list();
    if (all.length === 0) return "no tokens: the server is open to anyone who can reach it (loopback only)";
    return ["  id  state    scopes                apps                  created               name", ...all.map(describe)].join("\n");
  });
}

/** `reqlog token revoke ID`. */
export function revokeTokenCommand(options: StoreChoice, id: number): Promise<string> {
  return withTokens(options, async (tokens) => {
    if (!(await tokens.revoke(id))) throw new Error(`no active token with id ${id}`);
    if (await tokens.anyActive()) return `revoked token ${id}`;
    return [
      `revoked token ${id}: it was the last active token.`,
      "A server listening on a non-loopback address now refuses every call until a token is created;",
      "one listening on loopback only now serves anyone who can connect to it.",
    ].join("\n");
  });
}

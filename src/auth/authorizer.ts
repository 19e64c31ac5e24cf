import { ReqlogError } from "../reqlog-error.js";
import type { CallMetadata } from "../domain/call-metadata.js";
import type { TokenInfo, TokenStore } from "../store/store.js";

/** Who is calling: a token, or anyone while no token is configured (loopback only). */
export type Principal = { kind: "token"; token: TokenInfo } | { kind: "open" };

/** What a method needs: read:logs, write:logs, or admin (which holds both, and Delete). */
export type Access = "read" | "write" | "admin";

export interface Authorizer {
  /** Checks the bearer token of a call (and its rate); UNAUTHENTICATED or RESOURCE_EXHAUSTED when it fails. */
  authenticate(metadata: CallMetadata): Promise<Principal>;
  /**
   * Who a call's bearer token names, if it names anyone (undefined: it would
   * fail authentication), without counting the call against the rate: what a
   * transport asks before it reads a body.
   */
  identify(metadata: CallMetadata): Promise<Principal | undefined>;
  /** PERMISSION_DENIED unless the principal may `access` every one of `apps`. */
  authorize(principal: Principal, access: Access, apps: Iterable<string>): void;
  /** The app a call names implicitly: a token limited to exactly one app. */
  defaultApp(principal: Principal): string | undefined;
}

export interface AuthorizerOptions {
  /** Calls per second one token may make (0: no limit). */
  callsPerSecond: number;
  now?: () => number;
  /**
   * Why every call needs a token even while none is active (e.g. "it listens
   * on 0.0.0.0:50051, not loopback"): a server that needed a token to start
   * keeps refusing calls when the last one is revoked, instead of opening up.
   */
  tokensRequired?: string;
  /** Told once each time the last active token is found gone while tokens are required. */
  warn?: (message: string) => void;
}

/**
 * Bearer tokens from `authorization` metadata, checked against their hashes.
 * Once any token exists every call must present a valid one; with none, the
 * server is open (and then it listens on loopback only, see `serve`).
 */
export function createAuthorizer(tokens: Pick<TokenStore, "find" | "anyActive">, options: AuthorizerOptions): Authorizer {
  const now = options.now ?? (() => performance.now());
  // A token bucket per token: up to one second of calls in a burst.
  const buckets = new Map<number, { level: number; at: number }>();

  function charge(token: TokenInfo): void {
    const rate = options.callsPerSecond;
    if (rate <= 0) return;
    const t = now();
    const bucket = buckets.get(token.id) ?? { level: rate, at: t };
    bucket.level = Math.min(rate, bucket.level + ((t - bucket.at) / 1000) * rate);
    bucket.at = t;
    buckets.set(token.id, bucket);
    if (bucket.level < 1) {
      const retryMs = Math.ceil(((1 - bucket.level) / rate) * 1000);
      throw ReqlogError.exhausted(
        `rate limit of ${rate} calls/s for this token exceeded: retry in ${retryMs} ms (limit rate-limit=${rate})`,
        retryMs,
      );
    }
    bucket.level -= 1;
  }

  // Whether the last call found no active token while tokens are required (warned once per time it happens).
  let noneLeft = false;

  /** No token is active: open (loopback, or the operator's explicit opt-out), or refused when tokens are required. */
  function withoutTokens(): Principal {
    if (options.tokensRequired === undefined) return { kind: "open" };
    const message =
      `no access token is active and this server needs one (${options.tokensRequired}): ` +
      "it refuses every call until a token is created (reqlog token create --scope …)";
    if (!noneLeft) options.warn?.(message);
    noneLeft = true;
    throw ReqlogError.unauthenticated(message);
  }

  /** The principal a call's metadata names; UNAUTHENTICATED when it names none. */
  async function principalOf(metadata: CallMetadata): Promise<Principal> {
    const values = metadata.get("authorization");
    if (values.length === 0) {
      if (!(await tokens.anyActive())) return withoutTokens();
      noneLeft = false;
      throw ReqlogError.unauthenticated("missing access token: send call metadata authorization: Bearer <token>");
    }
    const match = /^Bearer\s+(\S+)\s*$/i.exec(String(values[0]));
    if (values.length > 1 || !match) {
      throw ReqlogError.unauthenticated("authorization metadata must be one 'Bearer <token>'");
    }
    const token = await tokens.find(match[1]!);
    if (!token) throw ReqlogError.unauthenticated("invalid or revoked access token");
    return { kind: "token", token };
  }

  return {
    async authenticate(metadata) {
      const principal = await principalOf(metadata);
      if (principal.kind === "token") charge(principal.token);
      return principal;
    },

    identify: (metadata) => principalOf(metadata).catch(() => undefined),

    authorize(principal, access, apps) {
      if (principal.kind === "open") return;
      const { scopes, apps: allowed } = principal.token;
      if (!scopes.includes("admin") && (access === "admin" || !scopes.includes(`${access}:logs`))) {
        throw ReqlogError.permissionDenied(`this token lacks the ${access === "admin" ? "admin" : `${access}:logs`} scope`);
      }
      if (allowed) {
        for (const app of apps) {
          if (!allowed.includes(app)) throw ReqlogError.permissionDenied(`this token is not allowed app "${app}"`);
        }
      }
    },

    defaultApp(principal) {
      return principal.kind === "token" && principal.token.apps?.length === 1 ? principal.token.apps[0] : undefined;
    },
  };
}

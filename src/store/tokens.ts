import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { ReqlogError } from "../reqlog-error.js";
import type { Scope, TokenInfo } from "./store.js";

/**
 * What every backend's TokenStore shares: the token's shape, its hash, and
 * how scopes and apps are kept as text. A token is `rql_<key id>_<secret>`:
 * a public 16-hex-digit key id (looked up) and 256 random bits (only the
 * SHA-256 of the whole token is kept).
 */
const tokenPattern = /^rql_([0-9a-f]{16})_[A-Za-z0-9_-]{43}$/;

function hashToken(token: string): Buffer {
  return createHash("sha256").update(token, "utf8").digest();
}

/** A new token for `create`: the token (shown once), and what is stored of it. */
export function newToken(options: { scopes: Scope[]; apps?: string[] }) {
  if (options.apps?.length === 0) {
    throw ReqlogError.invalid("a token's apps must name at least one app (leave them out for every app)");
  }
  const keyId = randomBytes(8).toString("hex");
  const token = `rql_${keyId}_${randomBytes(32).toString("base64url")}`;
  return {
    token,
    keyId,
    hash: hashToken(token),
    scopes: [...new Set(options.scopes)].join(" "),
    apps: options.apps ? JSON.stringify(options.apps) : null,
  };
}

/** The key id to look a presented token up by; undefined when it is not a token's shape. */
export function tokenKeyId(token: string): string | undefined {
  return tokenPattern.exec(token)?.[1];
}

/** Whether `token` is the one whose hash was stored (in constant time). */
export function tokenMatches(storedHash: Buffer, token: string): boolean {
  return timingSafeEqual(storedHash, hashToken(token));
}

/** A stored token's record, from its row's fields (scopes and apps as stored by newToken). */
export function tokenInfo(row: { id: number; name: string; scopes: string; apps: string | null; created: bigint; revoked: bigint | null }): TokenInfo {
  return {
    id: row.id,
    name: row.name,
    scopes: row.scopes.split(" ") as Scope[],
    apps: row.apps === null ? undefined : (JSON.parse(row.apps) as string[]),
    created: row.created,
    revoked: row.revoked === null ? undefined : row.revoked,
  };
}

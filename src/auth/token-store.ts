import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type Database from "better-sqlite3";
import type { Clock } from "../clock.js";

export const scopes = ["read:logs", "write:logs", "admin"] as const;
export type Scope = (typeof scopes)[number];

export interface TokenInfo {
  id: number;
  name: string;
  scopes: Scope[];
  /** undefined = every app. */
  apps?: string[];
  created: bigint;
  revoked?: bigint;
}

/** Tokens are `rql_<key id>_<secret>`: a public 16-hex-digit key id and 256 random bits. */
const tokenPattern = /^rql_([0-9a-f]{16})_[A-Za-z0-9_-]{43}$/;

function hashToken(token: string): Buffer {
  return createHash("sha256").update(token, "utf8").digest();
}

/** Tokens kept as hashes in the database (the tokens table). */
export function createTokenStore(db: Database.Database, now: Clock) {
  const insert = db.prepare("INSERT INTO tokens (key_id, hash, name, scopes, apps, created) VALUES (?, ?, ?, ?, ?, ?)");
  const byKey = db.prepare("SELECT * FROM tokens WHERE key_id = ? AND revoked IS NULL").safeIntegers(true);
  const byId = db.prepare("SELECT * FROM tokens WHERE id = ?").safeIntegers(true);
  const all = db.prepare("SELECT * FROM tokens ORDER BY id").safeIntegers(true);
  const revoke = db.prepare("UPDATE tokens SET revoked = ? WHERE id = ? AND revoked IS NULL");
  const active = db.prepare("SELECT count(*) FROM tokens WHERE revoked IS NULL").pluck();

  const info = (row: Record<string, unknown>): TokenInfo => ({
    id: Number(row.id),
    name: row.name as string,
    scopes: (row.scopes as string).split(" ") as Scope[],
    apps: row.apps === null ? undefined : (JSON.parse(row.apps as string) as string[]),
    created: row.created as bigint,
    revoked: row.revoked === null ? undefined : (row.revoked as bigint),
  });

  return {
    /** Creates a token; returns it (shown once) and its record. */
    create(options: { name: string; scopes: Scope[]; apps?: string[] }): { token: string; info: TokenInfo } {
      const keyId = randomBytes(8).toString("hex");
      const token = `rql_${keyId}_${randomBytes(32).toString("base64url")}`;
      const id = insert.run(
        keyId,
        hashToken(token),
        options.name,
        [...new Set(options.scopes)].join(" "),
        options.apps && options.apps.length > 0 ? JSON.stringify(options.apps) : null,
        now(),
      ).lastInsertRowid;
      return { token, info: info(byId.get(id) as Record<string, unknown>) };
    },
    /** The valid token a caller presented, or undefined. */
    find(token: string): TokenInfo | undefined {
      const match = tokenPattern.exec(token);
      if (!match) return undefined;
      const row = byKey.get(match[1]) as Record<string, unknown> | undefined;
      if (!row || !timingSafeEqual(row.hash as Buffer, hashToken(token))) return undefined;
      return info(row);
    },
    list(): TokenInfo[] {
      return (all.all() as Record<string, unknown>[]).map(info);
    },
    /** Revokes a token; false when there is no valid token with that id. */
    revoke(id: number): boolean {
      return revoke.run(now(), id).changes > 0;
    },
    /** Whether any valid token exists (then every call must present one). */
    anyActive(): boolean {
      return (active.get() as number) > 0;
    },
  };
}

export type TokenStore = ReturnType<typeof createTokenStore>;

import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type Database from "better-sqlite3";
import type { Clock } from "../../clock.js";
import type { Scope, TokenInfo, TokenStore } from "../store.js";
import { ReqlogError } from "../../reqlog-error.js";
import { guarded } from "./storage-error.js";

/** Tokens are `rql_<key id>_<secret>`: a public 16-hex-digit key id and 256 random bits. */
const tokenPattern = /^rql_([0-9a-f]{16})_[A-Za-z0-9_-]{43}$/;

function hashToken(token: string): Buffer {
  return createHash("sha256").update(token, "utf8").digest();
}

/** Tokens kept as hashes in the database (the tokens table). */
export function createSqliteTokens(db: Database.Database, now: Clock): TokenStore {
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
    create(options: { name: string; scopes: Scope[]; apps?: string[] }) {
      return guarded(undefined, () => {
        if (options.apps?.length === 0) {
          throw ReqlogError.invalid("a token's apps must name at least one app (leave them out for every app)");
        }
        const keyId = randomBytes(8).toString("hex");
        const token = `rql_${keyId}_${randomBytes(32).toString("base64url")}`;
        const id = insert.run(
          keyId,
          hashToken(token),
          options.name,
          [...new Set(options.scopes)].join(" "),
          options.apps ? JSON.stringify(options.apps) : null,
          now(),
        ).lastInsertRowid;
        return { token, info: info(byId.get(id) as Record<string, unknown>) };
      });
    },
    find(token: string) {
      return guarded(undefined, () => {
        const match = tokenPattern.exec(token);
        if (!match) return undefined;
        const row = byKey.get(match[1]) as Record<string, unknown> | undefined;
        if (!row || !timingSafeEqual(row.hash as Buffer, hashToken(token))) return undefined;
        return info(row);
      });
    },
    list() {
      return guarded(undefined, () => (all.all() as Record<string, unknown>[]).map(info));
    },
    revoke(id: number) {
      return guarded(undefined, () => revoke.run(now(), id).changes > 0);
    },
    anyActive() {
      return guarded(undefined, () => (active.get() as number) > 0);
    },
  };
}

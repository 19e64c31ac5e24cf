import type Database from "better-sqlite3";
import type { Clock } from "../../clock.js";
import type { Scope, TokenStore } from "../store.js";
import { newToken, tokenInfo, tokenKeyId, tokenMatches } from "../tokens.js";
import { guarded } from "./storage-error.js";

/** Tokens kept as hashes in the database (the tokens table). */
export function createSqliteTokens(db: Database.Database, now: Clock): TokenStore {
  const insert = db.prepare("INSERT INTO tokens (key_id, hash, name, scopes, apps, created) VALUES (?, ?, ?, ?, ?, ?)");
  const byKey = db.prepare("SELECT * FROM tokens WHERE key_id = ? AND revoked IS NULL").safeIntegers(true);
  const byId = db.prepare("SELECT * FROM tokens WHERE id = ?").safeIntegers(true);
  const all = db.prepare("SELECT * FROM tokens ORDER BY id").safeIntegers(true);
  const revoke = db.prepare("UPDATE tokens SET revoked = ? WHERE id = ? AND revoked IS NULL");
  const active = db.prepare("SELECT count(*) FROM tokens WHERE revoked IS NULL").pluck();

  const info = (row: Record<string, unknown>) =>
    tokenInfo({ ...(row as Parameters<typeof tokenInfo>[0]), id: Number(row.id) });

  return {
    create(options: { name: string; scopes: Scope[]; apps?: string[] }) {
      return guarded(undefined, () => {
        const { token, keyId, hash, scopes, apps } = newToken(options);
        const id = insert.run(keyId, hash, options.name, scopes, apps, now()).lastInsertRowid;
        return { token, info: info(byId.get(id) as Record<string, unknown>) };
      });
    },
    find(token: string) {
      return guarded(undefined, () => {
        const keyId = tokenKeyId(token);
        if (keyId === undefined) return undefined;
        const row = byKey.get(keyId) as Record<string, unknown> | undefined;
        if (!row || !tokenMatches(row.hash as Buffer, token)) return undefined;
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

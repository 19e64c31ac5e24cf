import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { Clock } from "../../clock.js";
import { ReqlogError } from "../../reqlog-error.js";
import type { Scope, TokenInfo, TokenStore } from "../store.js";
import type { SqlClient } from "./sql-client.js";
import { guarded } from "./storage-error.js";
import { sqlInt, sqlString } from "./sql-literal.js";

interface TokenRow {
  id: string;
  key_id: string;
  /** SHA-256 of the whole token, hex. */
  hash: string;
  name: string;
  scopes: string;
  apps: string | null;
  created: string;
  revoked: string | null;
  version: number;
}

/** Tokens are `rql_<key id>_<secret>` (as on SQLite): a public 16-hex-digit key id and 256 random bits. */
const tokenShape = /^rql_([0-9a-f]{16})_[A-Za-z0-9_-]{43}$/;
const sha256 = (token: string) => createHash("sha256").update(token, "utf8").digest();

const toInfo = (row: TokenRow): TokenInfo => ({
  id: Number(row.id),
  name: row.name,
  scopes: row.scopes.split(" ") as Scope[],
  apps: row.apps === null ? undefined : (JSON.parse(row.apps) as string[]),
  created: BigInt(row.created),
  revoked: row.revoked === null ? undefined : BigInt(row.revoked),
});

/**
 * Access tokens kept as hashes in the tokens table. A revocation inserts a
 * second version of the token's row (FINAL reads the latest). Ids are the
 * next after the highest, given out one at a time in this process.
 */
export function createClickHouseTokens(sql: SqlClient, now: Clock): TokenStore {
  /** Token changes one at a time: the next id, and a revocation, are decided on what the last change left. */
  let last: Promise<unknown> = Promise.resolve();
  const serially = <T>(work: () => Promise<T>): Promise<T> => {
    const run = last.then(work, work);
    last = run.catch(() => {});
    return run;
  };
  const select = (where: string) => sql.rows<TokenRow>(`SELECT * FROM tokens FINAL WHERE ${where} ORDER BY id`);

  return {
    create(options) {
      return guarded(undefined, () =>
        serially(async () => {
          if (options.apps?.length === 0) {
            throw ReqlogError.invalid("a token's apps must name at least one app (leave them out for every app)");
          }
          const [top] = await sql.rows<{ id: string }>("SELECT max(id) AS id FROM tokens");
          const keyId = randomBytes(8).toString("hex");
          const token = `rql_${keyId}_${randomBytes(32).toString("base64url")}`;
          const row: TokenRow = {
            id: String(BigInt(top?.id ?? "0") + 1n),
            key_id: keyId,
            hash: sha256(token).toString("hex"),
            name: options.name,
            scopes: [...new Set(options.scopes)].join(" "),
            apps: options.apps ? JSON.stringify(options.apps) : null,
            created: String(now()),
            revoked: null,
            version: 0,
          };
          await sql.insert("tokens", [row]);
          return { token, info: toInfo(row) };
        }),
      );
    },
    find(token) {
      return guarded(undefined, async () => {
        const keyId = tokenShape.exec(token)?.[1];
        if (keyId === undefined) return undefined;
        const [row] = await select(`key_id = ${sqlString(keyId)} AND revoked IS NULL`);
        if (!row || !timingSafeEqual(Buffer.from(row.hash, "hex"), sha256(token))) return undefined;
        return toInfo(row);
      });
    },
    list() {
      return guarded(undefined, async () => (await select("1")).map(toInfo));
    },
    revoke(id) {
      return guarded(undefined, () =>
        serially(async () => {
          const [row] = await select(`id = ${sqlInt(id)} AND revoked IS NULL`);
          if (!row) return false;
          await sql.insert("tokens", [{ ...row, revoked: String(now()), version: 1 }]);
          return true;
        }),
      );
    },
    anyActive() {
      return guarded(undefined, async () => (await select("revoked IS NULL")).length > 0);
    },
  };
}

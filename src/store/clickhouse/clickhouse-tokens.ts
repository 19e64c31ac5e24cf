import type { Clock } from "../../clock.js";
import type { TokenInfo, TokenStore } from "../store.js";
import { newToken, tokenInfo, tokenKeyId, tokenMatches } from "../tokens.js";
import type { DatabaseLock } from "./servers/ddl-lock.js";
import type { SqlClient } from "./sql-client.js";
import { guarded } from "./storage-error.js";
import { sqlInt, sqlString } from "./rows/sql-literal.js";

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

const toInfo = (row: TokenRow): TokenInfo =>
  tokenInfo({
    ...row,
    id: Number(row.id),
    created: BigInt(row.created),
    revoked: row.revoked === null ? null : BigInt(row.revoked),
  });

/**
 * Access tokens kept as hashes in the tokens table. A revocation inserts a
 * second version of the token's row (FINAL reads the latest). Ids are the
 * next after the highest, given out one at a time in this process and under
 * the database's lock, so two servers never give out one id twice.
 */
export function createClickHouseTokens(sql: SqlClient, now: Clock, lock: DatabaseLock): TokenStore {
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
        serially(() => lock(async () => {
          const { token, keyId, hash, scopes, apps } = newToken(options);
          const [top] = await sql.rows<{ id: string }>("SELECT max(id) AS id FROM tokens");
          const row: TokenRow = {
            id: String(BigInt(top?.id ?? "0") + 1n),
            key_id: keyId,
            hash: hash.toString("hex"),
            name: options.name,
            scopes,
            apps,
            created: String(now()),
            revoked: null,
            version: 0,
          };
          await sql.insert("tokens", [row]);
          return { token, info: toInfo(row) };
        })),
      );
    },
    find(token) {
      return guarded(undefined, async () => {
        const keyId = tokenKeyId(token);
        if (keyId === undefined) return undefined;
        const [row] = await select(`key_id = ${sqlString(keyId)} AND revoked IS NULL`);
        if (!row || !tokenMatches(Buffer.from(row.hash, "hex"), token)) return undefined;
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
      return guarded(undefined, async () => (await sql.rows(`SELECT 1 FROM tokens FINAL WHERE revoked IS NULL LIMIT 1`)).length > 0);
    },
  };
}

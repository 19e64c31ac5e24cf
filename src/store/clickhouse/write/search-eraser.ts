import { requestsRead } from "../rows/request-row.js";
import { termsSql } from "../rows/search-terms.js";
import { sqlInt, sqlList, sqlString } from "../rows/sql-literal.js";
import type { SqlClient } from "../sql-client.js";
import type { TableLayout } from "../table-layout.js";
import { mutationsDone } from "./mutations-done.js";

/** Requests (by rkey) or terms (by key) one statement names, at most (its SQL text stays small). */
const perStatement = 2_000;
/** Postings of standing requests a deletion leaves out by name, at most (about 45 bytes of SQL each). */
const maxKept = 5_000;

/**
 * Takes erased requests (by rkey: every version of them) out of the search
 * index (migration 005).
 */
export type EraseFromSearch = (app: string, rkeys: readonly string[], signal: AbortSignal) => Promise<void>;

/**
 * Delete's part in the search index (migration 005): the erased requests'
 * postings go, and so do the dictionary's entries (their text: a resource's
 * start, a token, a referrer, a user agent) that no request left is indexed
 * under. Called after their tombstones are written and before their rows
 * are deleted (their terms are read from them).
 *
 * Postings are keyed by sort time, which a request that stays may share:
 * those of the requests standing at these sort times are left out of the
 * deletion (so that no Read meanwhile misses them), and those of a version
 * a write stored there meanwhile are written again after the deletion is
 * asked for (a mutation leaves parts inserted after it alone). A term is still used when a request standing (not deleted, in
 * positions) has a posting under it; the entries of a term a write
 * meanwhile indexed under (before the deletion was asked for, so that it
 * takes theirs too) are written back. Other servers' writes meanwhile index
 * what they write themselves, in their INSERT.
 */
export function createSearchEraser(sql: SqlClient, layout: TableLayout): EraseFromSearch {
  return async (app, rkeys, signal) => {
    const app_ = sqlString(app);
    const erasedKeys = new Set<string>();
    for (let at = 0; at < rkeys.length; at += perStatement) {
      const versions = requestsRead(`WHERE app = ${app_} AND rkey IN ${sqlList(rkeys.slice(at, at + perStatement))}`);
      const erased = await sql.rows<{ k: string; t: string }>(
        `SELECT DISTINCT toString(key) AS k, toString(sort_time) AS t FROM (${termsSql(versions, "postings")})`,
        signal,
      );
      if (erased.length === 0) continue;
      const keys = [...new Set(erased.map((e) => e.k))];
      for (const k of keys) erasedKeys.add(k);
      const times = sqlList([...new Set(erased.map((e) => e.t))]);
      // The latest versions standing at these times (an erased request's is its tombstone: not indexed):
      // their postings are left out of the deletion, so that a Read meanwhile still finds them.
      // (Only those under the erased keys: no other is deleted. Past maxKept of them, the statement's text
      // would outgrow what a mutation's entry may hold on a cluster: they are deleted and written again.)
      const standing = requestsRead(`FINAL WHERE app = ${app_} AND sort_time IN ${times}`);
      const standingPostings = `SELECT DISTINCT toString(key) AS k, toString(sort_time) AS t FROM (${termsSql(standing, "postings")})
        WHERE key IN ${sqlList(keys)}`;
      const pairs = (rows: readonly { k: string; t: string }[]) => rows.map((p) => `tuple(${p.k}, ${p.t})`).join(", ");
      const found = await sql.rows<{ k: string; t: string }>(standingPostings, signal);
      const kept = found.length <= maxKept ? found : [];
      const keptOnes = kept.length === 0 ? "" : ` AND (key, sort_time) NOT IN (${pairs(kept)})`;
      await sql.command(
        layout.alter("search_postings", `DELETE WHERE app = ${app_} AND key IN ${sqlList(keys)} AND sort_time IN ${times}${keptOnes}`),
        signal,
      );
      // A write between the look and the deletion's asking may have stored a version at one of these times:
      // the deletion takes its postings too (it leaves alone only parts inserted after it). Those standing
      // now and not kept are written again.
      const keptSet = new Set(kept.map((p) => `${p.k} ${p.t}`));
      const again = (await sql.rows<{ k: string; t: string }>(standingPostings, signal)).filter((p) => !keptSet.has(`${p.k} ${p.t}`));
      if (again.length > 0) {
        await sql.command(
          `INSERT INTO search_postings (app, day, key, sort_time) SELECT app, day, key, sort_time FROM (${termsSql(standing, "postings")})
           WHERE (key, sort_time) IN (${pairs(again)})`,
          signal,
        );
      }
    }
    const all = [...erasedKeys];
    // Until the postings' mutations are applied, an erased request's postings still count as a use of their
    // terms (at a sort time a request standing shares): wait for them.
    if (all.length > 0) await mutationsDone(sql, layout, signal);
    /** Of `keys`, those a request standing (not deleted, in positions) has a posting under, with how many postings each has. */
    const usedOf = async (keys: string) =>
      // (GLOBAL: on a cluster postings and positions are sharded differently.)
      // (Aliased k: an alias named key would stand for key in the WHERE.)
      new Map(
        (
          await sql.rows<{ k: string; n: string }>(
            `SELECT toString(key) AS k, count() AS n FROM search_postings
             WHERE app = ${app_} AND key IN ${keys} AND sort_time GLOBAL IN (
               SELECT sort_time FROM positions FINAL
               WHERE app = ${app_} AND deleted = 0 AND sort_time GLOBAL IN (SELECT sort_time FROM search_postings WHERE app = ${app_} AND key IN ${keys}))
             GROUP BY key`,
            signal,
          )
        ).map((u) => [u.k, u.n]),
      );
    for (let at = 0; at < all.length; at += perStatement) {
      const keys = sqlList(all.slice(at, at + perStatement));
      const still = await usedOf(keys);
      const unused = all.slice(at, at + perStatement).filter((k) => !still.has(k));
      if (unused.length === 0) continue;
      const entries = await sql.rows<{ kind: string; k: string; text: string }>(
        `SELECT toString(kind) AS kind, toString(key) AS k, any(text) AS text FROM search_terms
         WHERE app = ${app_} AND key IN ${sqlList(unused)} GROUP BY kind, key`,
        signal,
      );
      await sql.command(layout.alter("search_terms", `DELETE WHERE app = ${app_} AND key IN ${sqlList(unused)}`), signal);
      // A write between the check and the deletion's asking may have indexed a version under one of
      // these terms: the deletion takes its entry too (it leaves alone only parts inserted after it).
      // Those in use now are written back, with their postings as their count (an upper bound).
      const now = await usedOf(sqlList(unused));
      const back = entries.filter((e) => now.has(e.k));
      if (back.length > 0) {
        await sql.command(
          `INSERT INTO search_terms (app, kind, key, text, n) VALUES ${back.map((e) => `(${app_}, ${sqlInt(BigInt(e.kind))}, ${e.k}, ${sqlString(e.text)}, ${now.get(e.k)})`).join(", ")}`,
          signal,
        );
      }
    }
  };
}

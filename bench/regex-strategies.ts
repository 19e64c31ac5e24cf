/**
 * How should Read evaluate RE2 filters over stored combined lines? Measures
 * each way on the same stored forge requests, against a JS RegExp baseline.
 *   npm run bench:regex -- [requests]
 */
import Database from "better-sqlite3";
import RE2 from "re2";
import { combinedSql } from "../src/store/sqlite/combined-sql.js";
import { benchDbPath, loadBackend } from "./load.js";

const n = Number(process.argv[2] ?? 200_000);
const pattern = '"GET /api/v1/repos/[^/]+/[^/]+/raw/go\\.mod HTTP/2\\.0" 500 ';

async function main() {
  const path = benchDbPath("regex");
  const { backend } = await loadBackend(path, n);
  await backend.close();
  const db = new Database(path, { readonly: true });
  const re = new RE2(pattern, "u");
  const js = new RegExp(pattern, "u");
  const rows = (sql: string) => db.prepare(sql).raw().iterate() as IterableIterator<unknown[]>;

  const ways: [string, () => number][] = [
    ["baseline: JS RegExp on strings, scanned in JS", () => {
      let m = 0;
      for (const [s] of rows(`SELECT ${combinedSql} FROM requests r`)) if (js.test(s as string)) m++;
      return m;
    }],
    ["RE2 on strings, scanned in JS", () => {
      let m = 0;
      for (const [s] of rows(`SELECT ${combinedSql} FROM requests r`)) if (re.test(s as string)) m++;
      return m;
    }],
    ["RE2 on Buffers, scanned in JS", () => {
      let m = 0;
      for (const [b] of rows(`SELECT CAST(${combinedSql} AS BLOB) FROM requests r`)) if (re.test(b as Buffer)) m++;
      return m;
    }],
    ["RE2 as an SQL function on TEXT", () => {
      db.function("re2_text", (s: unknown) => (re.test(s as string) ? 1 : 0));
      return db.prepare(`SELECT count(*) FROM requests r WHERE re2_text(${combinedSql})`).pluck().get() as number;
    }],
    ["RE2 as an SQL function on BLOB (what Read does)", () => {
      db.function("re2_blob", (b: unknown) => (re.test(b as Buffer) ? 1 : 0));
      return db.prepare(`SELECT count(*) FROM requests r WHERE re2_blob(CAST(${combinedSql} AS BLOB))`).pluck().get() as number;
    }],
  ];
  console.log(`RE2 strategies over ${n.toLocaleString()} stored forge requests (combined derived in SQL where not stored):`);
  let baseline = 0;
  for (const [label, run] of ways) {
    run(); // warm the page cache
    const t = performance.now();
    const matches = run();
    const rate = n / ((performance.now() - t) / 1000);
    if (baseline === 0) baseline = rate;
    console.log(`  ${label.padEnd(50)} ${Math.round(rate).toLocaleString().padStart(10)} rows/s  ${(rate / baseline).toFixed(2)}x  (${matches} matches)`);
  }
  db.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

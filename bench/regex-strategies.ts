/**
 * How should Read evaluate RE2 filters over stored combined lines? Measures
 * each way on the same stored forge requests, against a JS RegExp baseline.
 *   npm run bench:regex -- [requests]
 */
import Database from "better-sqlite3";
import RE2 from "re2";
import { combinedLineOf, combinedMatchArgsSql } from "../src/store/sqlite/read/combined-match.js";
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
  // Each row's combined line (stored, or built in JS from its fields, as Read builds it).
  const lines = () => {
    const statement = db.prepare(`SELECT ${combinedMatchArgsSql} FROM requests r`).raw().safeIntegers();
    return (function* () {
      for (const args of statement.iterate() as IterableIterator<unknown[]>) yield combinedLineOf(args);
    })();
  };
  const udf = (name: string, test: (line: string) => boolean) =>
    db.function(name, { varargs: true, safeIntegers: true }, (...args: unknown[]) => (test(combinedLineOf(args)) ? 1 : 0));

  const ways: [string, () => number][] = [
    ["baseline: JS RegExp on strings, scanned in JS", () => {
      let m = 0;
      for (const s of lines()) if (js.test(s)) m++;
      return m;
    }],
    ["RE2 on strings, scanned in JS", () => {
      let m = 0;
      for (const s of lines()) if (re.test(s)) m++;
      return m;
    }],
    ["RE2 on Buffers, scanned in JS", () => {
      let m = 0;
      for (const s of lines()) if (re.test(Buffer.from(s))) m++;
      return m;
    }],
    ["RE2 as an SQL function on TEXT", () => {
      udf("re2_text", (s) => re.test(s));
      return db.prepare(`SELECT count(*) FROM requests r WHERE re2_text(${combinedMatchArgsSql})`).pluck().get() as number;
    }],
    ["RE2 as an SQL function on bytes (what Read does)", () => {
      udf("re2_blob", (s) => re.test(Buffer.from(s)));
      return db.prepare(`SELECT count(*) FROM requests r WHERE re2_blob(${combinedMatchArgsSql})`).pluck().get() as number;
    }],
  ];
  console.log(`RE2 strategies over ${n.toLocaleString()} stored forge requests (combined built in JS where not stored):`);
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

/**
 * Migration 005-search: the search index of regex Reads (rows/search-terms.ts,
 * read/search-index.ts; docs/search-index.md, "On ClickHouse"). Numbered
 * after the many-servers migrations (004, 005): it needs nothing of them, and
 * they nothing of it (migrate.ts applies whatever is missing, in order).
 *
 * Both tables are filled by views of request_changes, so whichever server
 * inserts a version indexes it, in the same INSERT (no state in a process).
 * Named to run after the requests' and positions' views (views run in the
 * order of their names): a reader who finds a posting finds the position
 * and the version it came from.
 */
import { requestsRead } from "../rows/request-row.js";
import { termsSql } from "../rows/search-terms.js";
import type { TableLayout } from "../table-layout.js";

/** Shards of a cluster hold postings wherever an insert put them: reads ask every shard. */
const anywhere = "rand()";

export default (t: TableLayout): string[] => [
  // Which requests (by sort time: a position's key) are under each term.
  // Partitioned by the day of the request's creation, as requests and
  // positions are, so retention drops a day's postings with its requests;
  // `day` is the same on every row of a part (it costs no bytes).
  ...t.createTable("search_postings", `(
    app String,
    day UInt32,
    key UInt64,
    sort_time Int64
  ) ENGINE = ReplacingMergeTree PARTITION BY day ORDER BY (app, key, sort_time)`, anywhere),

  // The dictionary: each term's text (but a token's) and how many versions
  // were indexed under it (an upper bound of its postings: a search reads the
  // cheapest terms). Merges add the counts up.
  ...t.createTable("search_terms", `(
    app String,
    kind UInt8,
    key UInt64,
    text String,
    n Int64
  ) ENGINE = SummingMergeTree(n) ORDER BY (app, kind, key)`, anywhere),

  ...t.createView("request_changes_7_search_postings", "search_postings", (from) => `
    ${termsSql(from("request_changes"), "postings")}`),

  ...t.createView("request_changes_7_search_terms", "search_terms", (from) => `
    ${termsSql(from("request_changes"), "terms")}`),

  // The requests stored before: their latest versions (FINAL), as 002 filled
  // positions. Run again after a cut, postings are the same rows (merged
  // away) and counts only grow: they stay an upper bound.
  `INSERT INTO search_postings (app, day, key, sort_time)
   SELECT app, day, key, sort_time FROM (${termsSql(requestsRead("FINAL"), "postings")})`,
  `INSERT INTO search_terms (app, kind, key, text, n)
   SELECT app, kind, key, text, n FROM (${termsSql(requestsRead("FINAL"), "terms")})`,
];

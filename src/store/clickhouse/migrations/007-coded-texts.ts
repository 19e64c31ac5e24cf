/**
 * Migration 007-coded-texts: `requests` keeps a known method and HTTP
 * version as a one-character code (codedValues, rows/request-row.ts), set
 * by the requests' view, which marks the rows it stores so with a bit of
 * `set_fields`; requestsRead reads them back. Rows stored before keep their
 * texts and no mark, and read as they are: nothing is rewritten, and no
 * text stored before can read as another.
 *
 * The requests' view is made again under its name as 006 did (its new SQL
 * first under a second name, which sorts as the first does, then the old
 * one dropped and made again, then the second dropped), so that at every
 * moment a view stores the versions of another server's insert. While two
 * exist, a version is stored twice with the same seq, in both forms:
 * ReplacingMergeTree merges them, FINAL and the reads by latest seq take
 * one, and either reads the same. Run again after a cut, every step finds
 * its work done or does it again (IF NOT EXISTS, IF EXISTS).
 */
import { storedColumnSql } from "../rows/request-row.js";
import type { TableLayout } from "../table-layout.js";
import { columnNames } from "./001-init.js";

/** The requests' view as 007 makes it: what request_changes holds, in the forms requests keeps. */
const requestsView = (t: TableLayout, name: string) =>
  t.createView(name, "requests", (from) => `
    SELECT ${columnNames.map((c) => (c in storedColumnSql ? `${storedColumnSql[c]} AS ${c}` : c)).join(", ")} FROM ${from("request_changes")}`);

export default (t: TableLayout): string[] => [
  ...requestsView(t, "request_changes_4_requests_007"),
  t.dropView("request_changes_4_requests"),
  ...requestsView(t, "request_changes_4_requests"),
  t.dropView("request_changes_4_requests_007"),
];

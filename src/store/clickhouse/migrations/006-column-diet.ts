/**
 * Migration 006-column-diet: `requests` keeps `rkey` as 0 when it equals
 * `seq` (a request's first version, so nearly every row: 4 B a request
 * before), read back by requestsRead (rows/request-row.ts). The
 * writer stores a canonical IPv4 address in 5 characters (storedIp); that
 * needs no DDL. Rows stored before keep their forms, which read the same:
 * nothing is rewritten, and a server of an older build writing meanwhile
 * stores rows every build reads.
 *
 * The requests' view is made again under its name, its new SQL first
 * under a second name (which sorts, as the first, between the rollups'
 * views and the positions': views run in the order of their names), so
 * that at every moment a view stores the versions of another server's
 * insert. While two exist, a version is stored twice with the same seq:
 * ReplacingMergeTree merges them, FINAL and the reads by latest seq take
 * one. Run again after a cut, every step finds its work done or does it
 * again (IF NOT EXISTS, IF EXISTS).
 */
import { storedRkeySql } from "../rows/request-row.js";
import type { TableLayout } from "../table-layout.js";
import { columnNames } from "./001-init.js";

/** The requests' view as 006 makes it: what request_changes holds, in the forms requests keeps. */
const requestsView = (t: TableLayout, name: string) =>
  t.createView(name, "requests", (from) => `
    SELECT ${columnNames.map((c) => (c === "rkey" ? `${storedRkeySql} AS rkey` : c)).join(", ")} FROM ${from("request_changes")}`);

export default (t: TableLayout): string[] => [
  // (An alias may be named after a column it is made from here: 18.16 reads
  // that column's value inside it, as the migration test checks.)
  ...requestsView(t, "request_changes_4_requests_006"),
  t.dropView("request_changes_4_requests"),
  ...requestsView(t, "request_changes_4_requests"),
  t.dropView("request_changes_4_requests_006"),
];

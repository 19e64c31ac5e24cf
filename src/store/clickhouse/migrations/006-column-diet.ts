/**
 * Migration 006-column-diet: `requests` keeps `rkey` as 0 when it equals
 * `seq` (a request's first version, so nearly every row: 4 B a request
 * before), read back by rkeySql and fromStored (rows/request-row.ts). The
 * writer stores a canonical IPv4 address in 5 characters (storedIp); that
 * needs no DDL. Rows stored before keep their forms, which read the same:
 * nothing is rewritten, and a server of an older build writing meanwhile
 * stores rows every build reads.
 *
 * The requests' view is made again under a new name that still sorts
 * between the rollups' views and the positions' (views run in the order of
 * their names), before the old one is dropped: while both exist, a version
 * is stored twice with the same seq, which ReplacingMergeTree and FINAL take
 * once (both forms read the same), so no insert of another server passes
 * with no view storing its versions. Run again after a cut, each statement
 * finds its work done (IF NOT EXISTS, IF EXISTS).
 */
import { storedRkeySql } from "../rows/request-row.js";
import type { TableLayout } from "../table-layout.js";
import { columnNames } from "./001-init.js";

export default (t: TableLayout): string[] => [
  // (An alias may be named after a column it is made from here: 18.16 reads
  // that column's value inside it, as the migration test checks.)
  ...t.createView("request_changes_4_requests_narrow", "requests", (from) => `
    SELECT ${columnNames.map((c) => (c === "rkey" ? `${storedRkeySql} AS rkey` : c)).join(", ")} FROM ${from("request_changes")}`),
  t.dropView("request_changes_4_requests"),
];

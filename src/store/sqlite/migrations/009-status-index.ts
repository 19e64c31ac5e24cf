/**
 * Migration 009-status-index: the requests of error statuses (400 and up,
 * and the odd negative one) by app, status and sort time, so a query's
 * filter on them (`status:>=500`, `status:404`) visits only their rows
 * instead of every row of its time range (query-reader.ts decides when).
 * Partial: 2xx and 3xx are most requests and are rarely a selective
 * filter, and a write of one does not touch the index (docs/benchmarks.md
 * has what it saves and what it costs a write).
 */
export const errorStatusesSql = (column = "status") => `(${column} >= 400 OR ${column} < 0)`;

/** Whether every status from `lo` to `hi` (inclusive) is in the index: the same condition as errorStatusesSql. */
export const errorStatusesOnly = ([lo, hi]: readonly [number, number]) => lo >= 400 || hi < 0;

export default /* sql */ `
CREATE INDEX IF NOT EXISTS requests_by_status ON requests (app_key, status, sort_time) WHERE ${errorStatusesSql()};
`;

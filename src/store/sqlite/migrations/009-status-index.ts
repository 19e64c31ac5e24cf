/**
 * Migration 009-status-index: requests by app, status and sort time, so a
 * query's status filter (`status:>=500`, `status:404`) visits only the rows
 * of those statuses instead of every row of its time range (query-reader.ts
 * decides when; docs/benchmarks.md has what it saves and what it costs a
 * write).
 */
export default /* sql */ `
CREATE INDEX IF NOT EXISTS requests_by_status ON requests (app_key, status, sort_time);
`;

/** The regexes the search benchmarks ask every side, on forge traffic (bench/forge-traffic.ts). */

/** Few matches in a million: a scan visits every row; an index finds them. */
export const selectivePattern = '"GET /api/v1/repos/ci-bot/proto/raw/go\\.mod HTTP/2\\.0" 500 0 "https://dl\\.forge\\.example/';

/**
 * Two parts an index narrows, each in its own field (a resource start, a
 * referrer): hundreds of requests under either, few under both.
 */
export const twoPartPattern = 'GET /api/v1/licenses HTTP/2\\.0" 200 \\d+ "https://dl\\.forge\\.example/bob/api"';

/** Requests answered 5xx: no string of three characters is required, so no index narrows it. */
export const unindexablePattern = '" 5\\d\\d \\d+ "';

/** The apps of forge traffic: a search over "everything" asks each. */
export const trafficApps = ["forge", "forge-staging", "pages"];

/**
 * What `npm run bench` runs, and what it leaves out and why: every bench
 * script of package.json is in one of the two (test/bench/bench-list.test.ts
 * checks it), so a new bench is either run or named as left out.
 */

/** A bench `npm run bench` runs: its script under bench/, full-size arguments, quick arguments. */
export interface ListedBench {
  script: string;
  full: string[];
  quick: string[];
}

export const benches: ListedBench[] = [
  { script: "ingest-bench", full: ["2000000"], quick: ["100000"] },
  { script: "clickhouse-bench", full: ["1000000"], quick: ["50000"] },
  { script: "clickhouse-backend-bench", full: ["1000000"], quick: ["50000"] },
  { script: "search-bench", full: ["1000000"], quick: ["50000"] },
  { script: "search-scale-bench", full: ["1000000", "10000000"], quick: ["20000", "200000"] },
  { script: "tail-latency-bench", full: ["2000"], quick: ["200"] },
  { script: "usage-bench", full: ["10000", "10000000"], quick: ["1000", "100000"] },
  { script: "read-bench", full: ["1000000"], quick: ["100000"] },
  { script: "regex-strategies", full: ["200000"], quick: ["20000"] },
  { script: "rss-bench", full: ["600"], quick: ["20"] },
  { script: "import-bench", full: ["1000000"], quick: ["50000"] },
  { script: "middleware-bench", full: ["10", "5"], quick: ["3", "2"] },
  { script: "sdk-bench", full: ["300000", "3"], quick: ["30000", "1"] },
  { script: "privacy-bench", full: ["200000", "1000000", "100000"], quick: ["20000", "100000", "10000"] },
  { script: "stats-bench", full: ["200000", "10000", "1000000", "10000000"], quick: ["20000", "10000", "100000"] },
  { script: "http-bench", full: ["100000", "300"], quick: ["10000", "50"] },
  { script: "clickhouse-servers-bench", full: ["200000"], quick: ["20000"] },
  { script: "clickhouse-tail-servers-bench", full: ["1000"], quick: ["100"] },
  { script: "alerting-bench", full: ["--records", "400000", "--bursts", "5"], quick: ["--records", "20000", "--series", "500", "--bursts", "2"] },
  { script: "dashboard-screenshot", full: ["--requests", "1000000", "--hours", "720", "--loads", "5"], quick: ["--requests", "20000", "--loads", "2"] },
];

/** Bench scripts `npm run bench` does not run, each with the reason it prints. */
export const leftOut: Record<string, string> = {
  "against-build": "compares this build with another checkout's: npm run bench:against -- DIR [requests]",
  "clickhouse-write-cpu": "reqlog's CPU a record on ClickHouse step by step, against another checkout's: npm run bench:clickhouse-write-cpu -- DIR",
  "query-bench": "Query at 10M requests against ClickHouse, whose stores take hours to seed: npm run bench:query",
  "soak-bench": "a 24-minute memory soak under mixed load: npm run bench:soak",
  "attack-soak": "issue 23's attacks together for 10 minutes with writes going on, recorded in docs/security.md: npm run bench:attack-soak",
  "fuzz-long": "a long run of hostile messages, recorded in docs/security.md: npm run fuzz:long",
  "crash-soak": "kill -9 under load, recorded in docs/security.md: npm run crash:long",
};

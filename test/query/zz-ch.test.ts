import { createClient } from "@clickhouse/client";
import { it } from "vitest";
import { startClickHouse } from "../helpers/clickhouse-server.js";
it("probe", async () => {
  const server = await startClickHouse({ name: "probe-", inMemory: false });
  const ch = createClient({ url: server.url, request_timeout: 300000 });
  const run = async (sql: string) => { const t = performance.now(); const r = await ch.query({ query: sql, format: "JSONEachRow" }); const rows = await r.json() as unknown[]; return { ms: performance.now() - t, n: rows.length }; };
  await ch.command({ query: "CREATE TABLE rep (app String, request_id String, seq UInt64, sort_time Int64, ip String, status Int32, deleted UInt8) ENGINE = ReplacingMergeTree(seq) PARTITION BY intDiv(sort_time, 86400000000) ORDER BY (app, request_id)" });
  await ch.command({ query: "CREATE TABLE raw (app String, request_id String, sort_time Int64, ip String, status Int32) ENGINE = MergeTree ORDER BY (app, sort_time, request_id)" });
  await ch.command({ query: "INSERT INTO rep SELECT 'forge', toString(number), number, 1795000000000000 + number * 86400, concat(toString(number % 251), '.', toString(number % 13), '.1.', toString(number % 97)), if(number % 100 = 0, 500, 200), 0 FROM numbers(1000000)" });
  await ch.command({ query: "INSERT INTO raw SELECT 'forge', toString(number), 1795000000000000 + number * 86400, concat(toString(number % 251), '.', toString(number % 13), '.1.', toString(number % 97)), if(number % 100 = 0, 500, 200) FROM numbers(1000000)" });
  await ch.command({ query: "OPTIMIZE TABLE rep FINAL" }); await ch.command({ query: "OPTIMIZE TABLE raw FINAL" });
  const q = (from: string) => `SELECT ip, count() n FROM ${from} WHERE app = 'forge' AND status >= 500 ${from !== "raw" ? "AND deleted = 0" : ""} GROUP BY ip`;
  for (let round = 0; round < 3; round++) {
    for (const from of ["raw", "rep", "rep FINAL", "(SELECT * FROM rep WHERE intDiv(sort_time, 86400000000) IN (20775, 20776) AND app = 'forge' AND status >= 500)", "(SELECT * FROM rep WHERE intDiv(sort_time, 86400000000) IN (20775) AND app = 'forge' AND status >= 500 UNION ALL SELECT * FROM rep FINAL WHERE intDiv(sort_time, 86400000000) IN (20776) AND app = 'forge' AND status >= 500)"]) {
      const times = []; for (let i = 0; i < 5; i++) times.push((await run(q(from))).ms);
      times.sort((a, b) => a - b); console.log(from.slice(0, 20), "median", times[2]!.toFixed(1));
    }
  }
  console.log(JSON.stringify(await (await ch.query({ query: "SELECT partition, name, level, rows FROM system.parts WHERE active AND table = 'rep'", format: "JSONEachRow" })).json()));
  await server.stop();
}, 600000);

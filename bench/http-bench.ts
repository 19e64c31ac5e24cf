/**
 * HTTP/JSON Read against gRPC Read, on the same server and store: a page of
 * the newest 100 requests, asked over the gRPC port (the typed client), as
 * curl would over the HTTP port (a JSON POST), and with Connect's binary
 * format over HTTP/1.1. The sides alternate call by call, so drift on this
 * machine hits them alike; medians and ratios to gRPC are printed.
 *   npm run bench:http -- [requests] [calls]
 */
import { Agent, request as httpRequest } from "node:http";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { LogService } from "../gen/reqlog/v1/log_service_pb.js";
import { startBenchServer } from "./harness/bench-server.js";
import { benchDbPath, loadBackend, median } from "./load.js";

const n = Number(process.argv[2] ?? 100_000);
const calls = Number(process.argv[3] ?? 300);

async function main() {
  const path = benchDbPath("http");
  console.log(`loading ${n.toLocaleString()} forge requests into ${path} …`);
  const { backend } = await loadBackend(path, n);
  const server = await startBenchServer(backend, {}, { http: true });
  const url = `http://${server.httpAddress}/reqlog.v1.LogService/Read`;
  const binary = createClient(LogService, createConnectTransport({ baseUrl: `http://${server.httpAddress}`, httpVersion: "1.1", useBinaryFormat: true }));
  const request = { appId: "forge", count: 100n };
  const body = JSON.stringify({ appId: "forge", count: "100" });
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });

  const sides: Record<string, () => Promise<number>> = {
    "gRPC (typed client, HTTP/2)": async () => (await server.client.read(request)).log.length,
    "HTTP/JSON (fetch POST, as curl)": async () => {
      const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body });
      return ((await response.json()) as { log: unknown[] }).log.length;
    },
    "HTTP/JSON (node:http, keep-alive)": () =>
      new Promise((resolve, reject) => {
        const call = httpRequest(url, { method: "POST", agent, headers: { "content-type": "application/json" } }, (response) => {
          const chunks: Buffer[] = [];
          response.on("data", (chunk: Buffer) => chunks.push(chunk));
          response.on("end", () => resolve((JSON.parse(Buffer.concat(chunks).toString()) as { log: unknown[] }).log.length));
        });
        call.on("error", reject);
        call.end(body);
      }),
    "Connect binary (HTTP/1.1)": async () => (await binary.read(request)).log.length,
  };
  const times: Record<string, number[]> = Object.fromEntries(Object.keys(sides).map((k) => [k, []]));
  for (const side of Object.values(sides)) for (let i = 0; i < 20; i++) await side(); // warm up
  for (let i = 0; i < calls; i++) {
    const order = i % 2 === 0 ? Object.keys(sides) : Object.keys(sides).reverse();
    for (const name of order) {
      const t = performance.now();
      const records = await sides[name]!();
      times[name]!.push(performance.now() - t);
      if (records !== 100) throw new Error(`${name} returned ${records} records, not 100`);
    }
  }
  const grpc = median(times["gRPC (typed client, HTTP/2)"]!);
  console.log(`\nRead of the newest 100 of ${n.toLocaleString()} requests, median of ${calls} calls each (alternating):`);
  for (const [name, ms] of Object.entries(times)) {
    const m = median(ms);
    console.log(`  ${name.padEnd(34)} ${m.toFixed(2)} ms   ${(m / grpc).toFixed(2)}x gRPC`);
  }
  await server.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

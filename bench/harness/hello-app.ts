/**
 * A hello-world node:http server for the middleware bench, in a process of
 * its own: `node hello-app.js [REQLOG_ADDRESS]`. With an address, every
 * request goes through reqlog's requestLogger (and writes `lines` app lines)
 * to the reqlog server there; without, the handler alone. It prints its
 * port as JSON, then answers IPC messages: "stats" with its CPU time and the
 * SDK's counters, "flush" once the SDK has sent what it holds.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createReqlogClient, log, requestLogger } from "../../src/sdk/index.js";

const address = process.argv[2];
const lines = Number(process.argv[3] ?? 0);

const hello = (_req: IncomingMessage, res: ServerResponse) => {
  for (let i = 0; i < lines; i++) log.info("hello line");
  res.end("hello world");
};

const reqlog = address ? createReqlogClient({ server: address, app: "bench", version: "v1" }) : undefined;
const mw = reqlog ? requestLogger(reqlog) : undefined;
const server = createServer(mw ? (req, res) => mw(req, res, () => hello(req, res)) : hello);
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  console.log(JSON.stringify({ port: (server.address() as AddressInfo).port }));
});

process.on("message", async (message) => {
  if (message === "flush") await reqlog?.flush({ timeoutMs: 60_000 }).catch(() => {});
  process.send!({ message, cpu: process.cpuUsage(), requests: mw?.stats().requests, sdk: reqlog?.stats() });
});
process.on("disconnect", () => process.exit(0));

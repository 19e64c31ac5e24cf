/**
 * A hello-world node:http server for the middleware bench, in a process of
 * its own: `node hello-app.js MODE [REQLOG_ADDRESS] [LINES]`, MODE one of
 *   plain   the handler alone;
 *   scope   the handler run in a request scope (AsyncLocalStorage) only;
 *   logged  requestLogger in front, sending to the reqlog server at the
 *           address (down or up), the handler writing LINES app lines.
 * It prints its port as JSON, then answers IPC messages: "stats" with its
 * CPU time and the SDK's counters, "flush" once the SDK has sent what it holds.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { runInScope } from "../../src/sdk/app-log.js";
import { createReqlogClient, log, requestLogger } from "../../src/sdk/index.js";

const [mode, address, lines = "0"] = process.argv.slice(2);

const hello = (_req: IncomingMessage, res: ServerResponse) => {
  for (let i = 0; i < Number(lines); i++) log.info("hello line");
  res.end("hello world");
};

const reqlog = mode === "logged" ? createReqlogClient({ server: address!, app: "bench", version: "v1" }) : undefined;
const mw = reqlog ? requestLogger(reqlog) : undefined;
const handle =
  mode === "scope"
    ? (req: IncomingMessage, res: ServerResponse) =>
        runInScope({ lines: [], droppedLines: 0, maxLines: 1000, maxLineBytes: 65536 }, () => hello(req, res))
    : mw
      ? (req: IncomingMessage, res: ServerResponse) => mw(req, res, () => hello(req, res))
      : hello;
const server = createServer(handle);
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  console.log(JSON.stringify({ port: (server.address() as AddressInfo).port }));
});

process.on("message", async (message) => {
  if (message === "flush") await reqlog?.flush({ timeoutMs: 60_000 }).catch(() => {});
  process.send!({ message, cpu: process.cpuUsage(), requests: mw?.stats().requests, sdk: reqlog?.stats() });
});
process.on("disconnect", () => process.exit(0));

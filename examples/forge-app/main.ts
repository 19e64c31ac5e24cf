/**
 * The example forge app: `npm run example:forge`. Sends every request it
 * serves, with its app lines, to the reqlog server at REQLOG_SERVER.
 *
 *   REQLOG_SERVER   reqlog's gRPC address (default 127.0.0.1:50051)
 *   REQLOG_TOKEN    an access token with write:logs, when the server has tokens
 *   FORGE_LISTEN    HOST:PORT to serve on (default 127.0.0.1:3000)
 *   FORGE_APP_ID    the app id its requests are recorded under (default forge)
 *   FORGE_STARS     "on" to enable stars (default off: star endpoints answer 403)
 *   FORGE_SIGNING_KEY  key of the signed artifact URLs (default: a development key)
 */
import { createReqlogClient, log } from "reqlog/client";
import { createForgeApp } from "./forge-app.js";
import { developmentSigningKey } from "./signing-key.js";

const [host, port] = (process.env.FORGE_LISTEN ?? "127.0.0.1:3000").split(/:(?=\d+$)/);
const reqlog = createReqlogClient({
  server: process.env.REQLOG_SERVER ?? "127.0.0.1:50051",
  token: process.env.REQLOG_TOKEN,
  app: process.env.FORGE_APP_ID ?? "forge",
  version: "example",
  onError: (err) => console.error(`reqlog: ${err.message}`),
});
const { app } = createForgeApp({
  reqlog,
  signingKey: process.env.FORGE_SIGNING_KEY ?? developmentSigningKey,
  starsEnabled: process.env.FORGE_STARS === "on",
});

const server = app.listen(Number(port), host, () => {
  const message = `forge example app on http://${host}:${port}/api/v1, logging to reqlog at ${process.env.REQLOG_SERVER ?? "127.0.0.1:50051"} as app ${reqlog.app}`;
  console.log(message);
  // Outside any request: this line goes to the process's own request (see docs/sdk.md).
  log.info(message);
});

async function stop() {
  server.close();
  try {
    await reqlog.close({ timeoutMs: 5000 });
  } catch (err) {
    console.error(`reqlog: ${(err as Error).message}`);
  }
  const { acknowledged, dropped } = reqlog.stats();
  console.log(`sent ${acknowledged.records} requests and ${acknowledged.lines} app lines to reqlog (${dropped.records} dropped)`);
  process.exit(0);
}
process.once("SIGINT", stop);
process.once("SIGTERM", stop);

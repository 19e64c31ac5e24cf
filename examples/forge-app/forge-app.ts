import express, { type ErrorRequestHandler } from "express";
import { forgeRouteTable, log, type ReqlogClient, requestLogger, type RequestLoggerMiddleware } from "reqlog/client";
import { artifactsRouter } from "./artifacts.js";
import { createUrlSigner } from "./signed-url.js";
import { starsRouter } from "./stars.js";
import { teamsRouter } from "./teams.js";
import { webhooksRouter } from "./webhooks.js";

export interface ForgeAppOptions {
  /** Where the app's requests are recorded. */
  reqlog: ReqlogClient;
  /** Key of the artifact URL signatures. */
  signingKey: string;
  /** Whether the instance has stars enabled (default false: star endpoints answer 403). */
  starsEnabled?: boolean;
  /** The clock the signed URLs use, ms since the epoch. */
  now?: () => number;
}

/**
 * A small forge API server (a handful of seeds/forge-http-api.md's
 * behaviours under /api/v1) with reqlog's request logger in front.
 */
export function createForgeApp(options: ForgeAppOptions): { app: express.Express; requestLog: RequestLoggerMiddleware } {
  const app = express();
  // First, so that it sees every request, including the 404s and errors below.
  const requestLog = requestLogger(options.reqlog, { routes: forgeRouteTable });
  app.use(requestLog);
  app.use(express.json());

  const api = express.Router();
  api.use(webhooksRouter());
  api.use(teamsRouter());
  api.use(artifactsRouter(createUrlSigner(options.signingKey, options.now)));
  api.use(starsRouter(options.starsEnabled ?? false));
  app.use("/api/v1", api);

  app.use((req, res) => {
    log.info("no route for %s %s", req.method, req.path);
    res.status(404).json({ message: "not found" });
  });
  const failed: ErrorRequestHandler = (err: { status?: number; message?: string }, _req, res, _next) => {
    const status = typeof err.status === "number" && err.status >= 400 && err.status < 500 ? err.status : 500;
    if (status === 500) log.error(err);
    else log.warning("refused: %s", err.message);
    res.status(status).json({ message: status === 500 ? "internal error" : err.message });
  };
  app.use(failed);
  return { app, requestLog };
}

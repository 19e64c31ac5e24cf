/**
 * reqlog/client: what a Node app server needs to send its requests and app
 * log lines to reqlog.
 *
 *   const reqlog = createReqlogClient({ server: "127.0.0.1:50051", app: "forge" });
 *   app.use(requestLogger(reqlog, { routes: forgeRouteTable }));
 *   log.info("created hook %d", id); // in any handler
 */
export { createReqlogClient, type ReqlogClient, type ReqlogClientOptions, type RecordInit } from "./reqlog-client.js";
export type { BatchingLogger, BatchingOptions, Counts, Entry, LoggerStats, WhenFull } from "./batching-logger.js";
export type { RetryOptions } from "./retry-policy.js";
export { requestLogger, type RequestLoggerMiddleware } from "./request-logger.js";
export type { RequestLoggerOptions, RequestLoggerStats } from "./request-capture.js";
export type { TrustProxy } from "./client-address.js";
export { reqlogFastify, type ReqlogFastifyOptions } from "./fastify-plugin.js";
export { type AppLog, Level, log } from "./app-log.js";
export { routeTemplate } from "./route-template.js";
export { createRouteTable, forgeRouteTable, loadRouteTable, type RouteTable } from "../routes/route-table.js";
export { forgeRouteTemplates } from "../routes/forge-routes.js";
export { Code, ConnectError } from "@connectrpc/connect";

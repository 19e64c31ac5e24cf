import type { IncomingMessage, ServerResponse } from "node:http";
import { runInScope } from "./app-log.js";
import { createRequestCapture, watchExpressRoute, type RequestLoggerOptions, type RequestLoggerStats } from "./request-capture.js";
import type { ReqlogClient } from "./reqlog-client.js";

/** A `(req, res, next)` middleware, with what it has recorded. */
export interface RequestLoggerMiddleware {
  (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void): void;
  stats(): RequestLoggerStats;
}

/**
 * Records every request through `client`: Express middleware as it is
 * (`app.use(requestLogger(reqlog))`, first, so it sees every request), and
 * for a plain node:http server called in front of the handler:
 * `mw(req, res, () => handle(req, res))`. The handler runs inside the
 * request's scope, so `log.info(…)` anywhere in it travels with the record.
 * url_map_entry is Express's matched route (mount path and route path, as a
 * template: `/api/v1/teams/{id}`), else the route table's template, else "".
 */
export function requestLogger(client: ReqlogClient, options: RequestLoggerOptions = {}): RequestLoggerMiddleware {
  const capture = createRequestCapture(client, options);
  const middleware = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => {
    const scope = capture.begin(req, res, watchExpressRoute(req));
    if (scope) runInScope(scope, next);
    else next();
  };
  return Object.assign(middleware, { stats: capture.stats });
}

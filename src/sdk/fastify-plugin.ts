import type { FastifyPluginCallback } from "fastify";
import { type RequestScope, runInScope } from "./app-log.js";
import { createRequestCapture, type RequestLoggerOptions } from "./request-capture.js";
import type { ReqlogClient } from "./reqlog-client.js";
import { routeTemplate } from "./route-template.js";

export interface ReqlogFastifyOptions extends RequestLoggerOptions {
  client: ReqlogClient;
}

const scopeKey = Symbol("reqlog scope");
type WithScope = { [scopeKey]?: RequestScope };

/**
 * The request logger as a Fastify plugin:
 * `app.register(reqlogFastify, { client: reqlog })`. It records every
 * request of the instance it is registered on (it does not stay inside the
 * plugin's encapsulation), url_map_entry from Fastify's matched route
 * (`/teams/:id` → `/teams/{id}`). The scope that `log` writes to is entered
 * when the request arrives and again before the handler, as the body is
 * read in callbacks of the socket's that would not carry it.
 */
export const reqlogFastify: FastifyPluginCallback<ReqlogFastifyOptions> = Object.assign(
  ((fastify, { client, ...options }, done) => {
    const capture = createRequestCapture(client, options);
    fastify.addHook("onRequest", (request, reply, next) => {
      const scope = capture.begin(request.raw, reply.raw, () => {
        const url = request.routeOptions.url;
        return url === undefined ? undefined : routeTemplate(url);
      });
      if (!scope) return next();
      (request as WithScope)[scopeKey] = scope;
      runInScope(scope, next);
    });
    fastify.addHook("preHandler", (request, _reply, next) => {
      const scope = (request as WithScope)[scopeKey];
      if (scope) runInScope(scope, next);
      else next();
    });
    if (!fastify.hasDecorator("reqlogStats")) fastify.decorate("reqlogStats", capture.stats);
    done();
  }) as FastifyPluginCallback<ReqlogFastifyOptions>,
  {
    // What the fastify-plugin package sets: hooks apply to the instance the plugin is registered on.
    [Symbol.for("skip-override")]: true,
    [Symbol.for("fastify.display-name")]: "reqlog",
  },
);

import { type Request, type Response, Router } from "express";
import { log } from "reqlog/client";

interface Webhook {
  id: number;
  type: string;
  active: boolean;
  branch_filter: string;
  events: string[];
  config: { url: string; content_type: string; secret?: string };
  is_system_webhook: boolean;
}

/** A webhook as the API answers it: its secret is never sent back. */
function view(hook: Webhook) {
  const { secret: _secret, ...config } = hook.config;
  return { ...hook, config: { ...config, is_system_webhook: hook.is_system_webhook } };
}

function refuse(res: Response, status: number, message: string) {
  res.status(status).json({ message });
}

const strings = (value: unknown): value is string[] => Array.isArray(value) && value.every((v) => typeof v === "string");

/**
 * The admin webhooks of seeds/forge-http-api.md: a system webhook (all
 * repositories' events) when config.is_system_webhook is true, a default
 * webhook (copied into new repositories) when it is false or left out. The
 * list returns system webhooks unless `type` says default, or `all` (this
 * example's literal for both kinds); a missing webhook is 404.
 */
export function webhooksRouter(): Router {
  const hooks = new Map<number, Webhook>();
  let nextId = 1;
  const router = Router();

  const find = (req: Request, res: Response): Webhook | undefined => {
    const id = Number(req.params.id);
    const hook = Number.isSafeInteger(id) ? hooks.get(id) : undefined;
    if (!hook) {
      log.info("webhook %s not found", req.params.id);
      refuse(res, 404, "webhook not found");
    }
    return hook;
  };

  router.post("/admin/hooks", (req, res) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const config = (body.config ?? {}) as Record<string, unknown>;
    if (typeof body.type !== "string" || body.type === "") return refuse(res, 422, "type is required");
    if (typeof config.url !== "string" || !/^https?:\/\//.test(config.url)) return refuse(res, 422, "config.url must be an http(s) URL");
    if (body.events !== undefined && !strings(body.events)) return refuse(res, 422, "events must be a list of event names");
    const hook: Webhook = {
      id: nextId++,
      type: body.type,
      active: body.active !== false,
      branch_filter: typeof body.branch_filter === "string" ? body.branch_filter : "*",
      events: (body.events as string[] | undefined) ?? ["push"],
      config: {
        url: config.url,
        content_type: typeof config.content_type === "string" ? config.content_type : "json",
        secret: typeof config.secret === "string" ? config.secret : undefined,
      },
      is_system_webhook: config.is_system_webhook === true,
    };
    hooks.set(hook.id, hook);
    log.info("created %s webhook %d for %s", hook.is_system_webhook ? "system" : "default", hook.id, hook.config.url);
    res.status(201).json(view(hook));
  });

  router.get("/admin/hooks", (req, res) => {
    const type = req.query.type ?? "system";
    if (type !== "system" && type !== "default" && type !== "all") {
      log.warning("unknown webhook type %j", type);
      return refuse(res, 422, "type must be system, default or all");
    }
    const listed = [...hooks.values()].filter((h) => type === "all" || h.is_system_webhook === (type === "system"));
    log.debug("listing %d %s webhooks", listed.length, type);
    res.json(listed.map(view));
  });

  router.get("/admin/hooks/:id", (req, res) => {
    const hook = find(req, res);
    if (hook) res.json(view(hook));
  });

  router.patch("/admin/hooks/:id", (req, res) => {
    const hook = find(req, res);
    if (!hook) return;
    const body = (req.body ?? {}) as Record<string, unknown>;
    const config = (body.config ?? {}) as Record<string, unknown>;
    if (config.is_system_webhook !== undefined && config.is_system_webhook !== hook.is_system_webhook) {
      return refuse(res, 422, "is_system_webhook cannot be changed: create a webhook of the other kind");
    }
    if (body.events !== undefined && !strings(body.events)) return refuse(res, 422, "events must be a list of event names");
    if (typeof body.active === "boolean") hook.active = body.active;
    if (typeof body.branch_filter === "string") hook.branch_filter = body.branch_filter;
    if (body.events !== undefined) hook.events = body.events as string[];
    if (typeof config.url === "string") hook.config.url = config.url;
    if (typeof config.content_type === "string") hook.config.content_type = config.content_type;
    if (typeof config.secret === "string") hook.config.secret = config.secret;
    log.info("updated webhook %d", hook.id);
    res.json(view(hook));
  });

  router.delete("/admin/hooks/:id", (req, res) => {
    const hook = find(req, res);
    if (!hook) return;
    hooks.delete(hook.id);
    log.info("deleted webhook %d", hook.id);
    res.status(204).end();
  });

  return router;
}

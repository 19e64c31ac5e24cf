import { type Request, type Response, Router } from "express";
import { log } from "reqlog/client";

/**
 * Star endpoints. With stars disabled on the instance every one of them
 * answers 403 "Stars are disabled." (seeds/forge-http-api.md); enabled, a
 * user (this example has one) stars and unstars repositories.
 */
export function starsRouter(enabled: boolean): Router {
  const starred = new Set<string>();
  const router = Router();
  const disabled = (_req: Request, res: Response, next: () => void) => {
    if (enabled) return next();
    log.warning("Stars are disabled.");
    res.status(403).json({ message: "Stars are disabled." });
  };
  const repo = (req: Request) => `${req.params.owner}/${req.params.repo}`;

  router.get("/user/starred", disabled, (_req, res) => {
    res.json([...starred].map((full_name) => ({ full_name })));
  });
  router.get("/user/starred/:owner/:repo", disabled, (req, res) => {
    res.status(starred.has(repo(req)) ? 204 : 404).end();
  });
  router.put("/user/starred/:owner/:repo", disabled, (req, res) => {
    starred.add(repo(req));
    log.info("starred %s", repo(req));
    res.status(204).end();
  });
  router.delete("/user/starred/:owner/:repo", disabled, (req, res) => {
    starred.delete(repo(req));
    log.info("unstarred %s", repo(req));
    res.status(204).end();
  });
  router.get("/repos/:owner/:repo/stargazers", disabled, (req, res) => {
    res.json(starred.has(repo(req)) ? [{ login: "alice" }] : []);
  });
  return router;
}

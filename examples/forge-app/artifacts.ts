import { type Request, type Response, Router } from "express";
import { log } from "reqlog/client";
import type { UrlSigner } from "./signed-url.js";

interface Artifact {
  id: number;
  name: string;
  run: number;
  repo: string;
  size_in_bytes: number;
}

/** The smallest valid zip file: an empty archive (its end-of-central-directory record). */
const emptyZip = Buffer.from([0x50, 0x4b, 0x05, 0x06, ...new Array<number>(18).fill(0)]);

const artifacts: Artifact[] = [
  { id: 1, name: "binaries", run: 7001, repo: "alice/app", size_in_bytes: emptyZip.length },
  { id: 2, name: "coverage", run: 7001, repo: "alice/app", size_in_bytes: emptyZip.length },
  { id: 3, name: "site", run: 7002, repo: "alice/website", size_in_bytes: emptyZip.length },
];

/**
 * Workflow artifacts under the repository prefix (seeds/forge-http-api.md):
 * listing by run and by repository, one artifact, and its download: the zip
 * route answers 302 to the raw route with a signed URL valid for an hour;
 * the raw route serves the zip only when the signature holds for that
 * artifact and has not expired, else 401.
 */
export function artifactsRouter(signer: UrlSigner): Router {
  const router = Router();
  const base = "/repos/:owner/:repo/actions";
  const repo = (req: Request) => `${req.params.owner}/${req.params.repo}`;
  const find = (req: Request, res: Response): Artifact | undefined => {
    const artifact = artifacts.find((a) => String(a.id) === req.params.artifact_id && a.repo === repo(req));
    if (!artifact) {
      log.info("artifact %s of %s not found", req.params.artifact_id, repo(req));
      res.status(404).json({ message: "artifact not found" });
    }
    return artifact;
  };

  router.get(`${base}/runs/:run/artifacts`, (req, res) => {
    const listed = artifacts.filter((a) => a.repo === repo(req) && String(a.run) === req.params.run);
    res.json({ total_count: listed.length, artifacts: listed });
  });
  router.get(`${base}/artifacts`, (req, res) => {
    const listed = artifacts.filter((a) => a.repo === repo(req));
    res.json({ total_count: listed.length, artifacts: listed });
  });
  router.get(`${base}/artifacts/:artifact_id`, (req, res) => {
    const artifact = find(req, res);
    if (artifact) res.json(artifact);
  });
  router.get(`${base}/artifacts/:artifact_id/zip`, (req, res) => {
    const artifact = find(req, res);
    if (!artifact) return;
    const raw = `${req.baseUrl}/repos/${repo(req)}/actions/artifacts/${artifact.id}/zip/raw?${signer.sign(String(artifact.id))}`;
    log.info("redirecting artifact %d download to its raw route", artifact.id);
    res.redirect(302, raw);
  });
  router.get(`${base}/artifacts/:artifact_id/zip/raw`, (req, res) => {
    const refusal = signer.refusal(req.params.artifact_id!, req.query.expires, req.query.sig);
    if (refusal) {
      log.warning("%s (artifact %s)", refusal, req.params.artifact_id);
      res.status(401).json({ message: refusal });
      return;
    }
    const artifact = find(req, res);
    if (!artifact) return;
    log.debug("serving artifact %d", artifact.id);
    res.type("application/zip").attachment(`${artifact.name}.zip`).send(emptyZip);
  });
  return router;
}

import { Router } from "express";
import { log } from "reqlog/client";

const organization = {
  id: 1,
  name: "infra",
  full_name: "Infrastructure",
  avatar_url: "https://forge.example/avatars/infra",
  description: "Build and deploy",
  website: "https://infra.forge.example",
  location: "Everywhere",
  visibility: "public",
  repo_admin_change_team_access: false,
  username: "infra",
};

const teams = new Map([
  [1, { id: 1, name: "Owners", description: "Owners of infra", includes_all_repositories: true, permission: "owner" }],
  [2, { id: 2, name: "deployers", description: "May deploy", includes_all_repositories: false, permission: "write" }],
]);

/** GET /teams/{id}: the team with its organization member always filled in (seeds/forge-http-api.md). */
export function teamsRouter(): Router {
  const router = Router();
  router.get("/teams/:id", (req, res) => {
    const team = teams.get(Number(req.params.id));
    if (!team) {
      log.info("team %s not found", req.params.id);
      res.status(404).json({ message: "team not found" });
      return;
    }
    res.json({ ...team, organization });
  });
  return router;
}

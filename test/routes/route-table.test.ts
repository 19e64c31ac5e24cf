import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { forgeRouteTemplates } from "../../src/routes/forge-routes.js";
import { createRouteTable, forgeRouteTable, loadRouteTable, pathOf } from "../../src/routes/route-table.js";

describe("the forge route table", () => {
  it.each([
    ["/api/v1/admin/hooks", "/api/v1/admin/hooks"],
    ["/api/v1/admin/hooks?type=default", "/api/v1/admin/hooks"],
    ["/api/v1/admin/hooks/17", "/api/v1/admin/hooks/{id}"],
    ["/api/v1/teams/3", "/api/v1/teams/{id}"],
    ["/api/v1/orgs/infra/rename", "/api/v1/orgs/{org}/rename"],
    ["/api/v1/users/alice/orgs", "/api/v1/users/{username}/orgs"],
    ["/api/v1/users/alice/orgs/infra/permissions", "/api/v1/users/{username}/orgs/{org}/permissions"],
    ["/api/v1/admin/users/alice", "/api/v1/admin/users/{username}"],
    ["/api/v1/repos/alice/app/actions/runs/9912/artifacts", "/api/v1/repos/{owner}/{repo}/actions/runs/{run}/artifacts"],
    ["/api/v1/repos/alice/app/actions/artifacts", "/api/v1/repos/{owner}/{repo}/actions/artifacts"],
    ["/api/v1/repos/alice/app/actions/artifacts/88", "/api/v1/repos/{owner}/{repo}/actions/artifacts/{artifact_id}"],
    ["/api/v1/repos/alice/app/actions/artifacts/88/zip", "/api/v1/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/zip"],
    ["/api/v1/repos/alice/app/actions/artifacts/88/zip/raw?sig=ab12", "/api/v1/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/zip/raw"],
    ["/api/v1/repos/alice/app/branches", "/api/v1/repos/{owner}/{repo}/branches"],
    ["/api/v1/repos/alice/app/branches/feature/x", "/api/v1/repos/{owner}/{repo}/branches/{branch*}"],
    ["/api/v1/repos/alice/app/commits?stat=false", "/api/v1/repos/{owner}/{repo}/commits"],
    ["/api/v1/repos/alice/app/compare/main...feature/x", "/api/v1/repos/{owner}/{repo}/compare/{basehead*}"],
    ["/api/v1/repos/alice/app/issues/12/labels", "/api/v1/repos/{owner}/{repo}/issues/{index}/labels"],
    ["/api/v1/repos/alice/app/issues/pinned", "/api/v1/repos/{owner}/{repo}/issues/pinned"],
    ["/api/v1/repos/alice/app/labels", "/api/v1/repos/{owner}/{repo}/labels"],
    ["/api/v1/repos/alice/app/forks", "/api/v1/repos/{owner}/{repo}/forks"],
    ["/api/v1/repos/alice/app/raw/docs/README.md", "/api/v1/repos/{owner}/{repo}/raw/{filepath*}"],
    ["/api/v1/user/starred/alice/app", "/api/v1/user/starred/{owner}/{repo}"],
    ["https://forge.example/api/v1/teams/3?x=1", "/api/v1/teams/{id}"],
  ])("%s is %s", (path, template) => {
    expect(forgeRouteTable.match(path)).toBe(template);
  });

  it("leaves paths outside the API, and empty parameters, unmatched", () => {
    expect(forgeRouteTable.match("/")).toBeUndefined();
    expect(forgeRouteTable.match("/alice/app/src/branch/main")).toBeUndefined();
    expect(forgeRouteTable.match("/api/v1/teams/")).toBeUndefined();
    expect(forgeRouteTable.match("/api/v1/repos/alice/app/raw/")).toBeUndefined();
    expect(forgeRouteTable.match("/api/v1/admin/hooks/1/extra")).toBeUndefined();
  });

  it("holds each template once", () => {
    expect(new Set(forgeRouteTemplates).size).toBe(forgeRouteTemplates.length);
    for (const template of forgeRouteTemplates) expect(forgeRouteTable.match(template)).toBe(template);
  });
});

describe("route table matching", () => {
  it("prefers a literal segment, then a parameter, then a rest parameter", () => {
    const table = createRouteTable(["/files/{path*}", "/files/{id}", "/files/new", "/files/{id}/raw"]);
    expect(table.match("/files/new")).toBe("/files/new");
    expect(table.match("/files/7")).toBe("/files/{id}");
    expect(table.match("/files/7/raw")).toBe("/files/{id}/raw");
    expect(table.match("/files/7/other")).toBe("/files/{path*}");
  });

  it("backtracks from a literal branch that does not match to a parameter", () => {
    const table = createRouteTable(["/a/new/edit", "/a/{id}/view"]);
    expect(table.match("/a/new/view")).toBe("/a/{id}/view");
  });

  it("lets a later template of the same shape win", () => {
    expect(createRouteTable(["/teams/{id}", "/teams/{team}"]).match("/teams/4")).toBe("/teams/{team}");
  });

  it.each([
    ["teams/{id}", "does not start with /"],
    ["/teams/{id}?x", "holds a query"],
    ["/teams/x{id}", 'segment "x{id}" is neither literal'],
    ["/raw/{path*}/edit", "rest parameter {path*} is not its last segment"],
  ])("refuses %s naming why", (template, problem) => {
    expect(() => createRouteTable([template])).toThrow(problem);
  });

  it("reduces a resource to its path", () => {
    expect(pathOf("http://forge.example")).toBe("/");
    expect(pathOf("/a/b?c=1#d")).toBe("/a/b");
    expect(pathOf("*")).toBe("*");
  });
});

describe("routes files", () => {
  const file = (text: string) => {
    const path = join(mkdtempSync(join(tmpdir(), "reqlog-routes-")), "routes.txt");
    writeFileSync(path, text);
    return path;
  };

  it("extends the forge table and overrides it", () => {
    const table = loadRouteTable(file("# ours\n/healthz\n\n/api/v1/teams/{team_id}  # renamed\n"));
    expect(table.match("/healthz")).toBe("/healthz");
    expect(table.match("/api/v1/teams/9")).toBe("/api/v1/teams/{team_id}");
    expect(table.match("/api/v1/admin/hooks/2")).toBe("/api/v1/admin/hooks/{id}");
  });

  it("replaces the forge table with !replace-builtin", () => {
    const table = loadRouteTable(file("!replace-builtin\n/healthz\n"));
    expect(table.match("/healthz")).toBe("/healthz");
    expect(table.match("/api/v1/admin/hooks/2")).toBeUndefined();
  });

  it("names the file and line of a bad template", () => {
    const path = file("/ok\n\nbad/{id}\n");
    expect(() => loadRouteTable(path)).toThrow(`${path}:3: route template "bad/{id}": it does not start with /`);
    expect(() => loadRouteTable(file("/ok\n!replace-builtin\n"))).toThrow(":2: !replace-builtin must come before any template");
  });
});

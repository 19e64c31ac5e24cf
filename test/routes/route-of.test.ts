import { describe, expect, it } from "vitest";
import { collapsePath, routeOf } from "../../src/routes/route-of.js";
import { maxStatsNameLength, statsFactsOf, statusClassOf } from "../../src/write/stats-facts.js";

describe("collapsePath (forge API routes)", () => {
  it.each([
    ["/api/v1/admin/hooks/42", "/api/v1/admin/hooks/{id}"],
    ["/api/v1/admin/hooks?type=default", "/api/v1/admin/hooks"],
    ["/api/v1/teams/17", "/api/v1/teams/{id}"],
    ["/api/v1/orgs/acme/rename", "/api/v1/orgs/acme/rename"],
    ["/api/v1/admin/users/alice/rename", "/api/v1/admin/users/alice/rename"],
    ["/api/v1/repos/alice/app/actions/runs/123456/artifacts", "/api/v1/repos/alice/app/actions/runs/{id}/artifacts"],
    ["/api/v1/repos/alice/app/actions/artifacts/7/zip", "/api/v1/repos/alice/app/actions/artifacts/{id}/zip"],
    ["/api/v1/repos/alice/app/actions/artifacts/7/zip/raw?sig=9f86d081884c7d65&expires=1795000000", "/api/v1/repos/alice/app/actions/artifacts/{id}/zip/raw"],
    ["/api/v1/repos/alice/app/git/commits/3f2a9c0d1e2b4a5f6e7d8c9b0a1f2e3d4c5b6a79?stat=false&files=false", "/api/v1/repos/alice/app/git/commits/{id}"],
    ["/api/v1/repos/alice/app/commits/3F2A9C0", "/api/v1/repos/alice/app/commits/{id}"],
    ["/api/v1/repos/alice/app/compare/main...feature", "/api/v1/repos/alice/app/compare/main...feature"],
    ["/api/v1/repos/alice/app/issues/12/labels", "/api/v1/repos/alice/app/issues/{id}/labels"],
    ["/api/v1/packages/alice/generic/x/550e8400-e29b-41d4-a716-446655440000", "/api/v1/packages/alice/generic/x/{id}"],
    ["/api/v1/users/alice/orgs/acme/permissions", "/api/v1/users/alice/orgs/acme/permissions"],
    ["/api/v1/user/starred/a/b#top", "/api/v1/user/starred/a/b"],
  ])("%s → %s", (resource, route) => {
    expect(collapsePath(resource)).toBe(route);
  });

  it("keeps words made of hex letters, short hex with digits and ids inside a segment", () => {
    expect(collapsePath("/api/v1/repos/alice/facade/branches/deadbeef")).toBe("/api/v1/repos/alice/facade/branches/deadbeef");
    expect(collapsePath("/api/v1/repos/alice/app/tags/v1.2.3")).toBe("/api/v1/repos/alice/app/tags/v1.2.3");
    expect(collapsePath("/api/v1/repos/alice/a1b2c3/archive/12.tar.gz")).toBe("/api/v1/repos/alice/a1b2c3/archive/12.tar.gz");
  });

  it("reduces an absolute URL to its path and gives / for an empty one", () => {
    expect(collapsePath("https://forge.example:8443/api/v1/teams/3?x=1")).toBe("/api/v1/teams/{id}");
    expect(collapsePath("http://forge.example")).toBe("/");
    expect(collapsePath("?q=1")).toBe("/");
    expect(collapsePath("*")).toBe("*");
  });
});

describe("routeOf", () => {
  it("is the url_map_entry when the writer set one, else the collapsed path", () => {
    expect(routeOf({ urlMapEntry: "/api/v1/teams/{id}", resource: "/api/v1/teams/5" })).toBe("/api/v1/teams/{id}");
    expect(routeOf({ urlMapEntry: "", resource: "/api/v1/teams/5?page=2" })).toBe("/api/v1/teams/{id}");
  });
});

describe("statsFactsOf", () => {
  const request = { urlMapEntry: "", resource: "/a/1", status: 200, latency: 1500n, responseSize: 10n, ip: "10.0.0.1", userAgent: "curl/8.5" };

  it("gives the status class (0 outside 100..599) and counts only 5xx as errors", () => {
    expect([0, 99, 100, 204, 302, 404, 499, 500, 599, 600].map(statusClassOf)).toEqual([0, 0, 1, 2, 3, 4, 4, 5, 5, 0]);
    expect(statsFactsOf({ ...request, status: 503 })).toMatchObject({ statusClass: 5, error: true });
    expect(statsFactsOf({ ...request, status: 404 })).toMatchObject({ statusClass: 4, error: false });
  });

  it("counts negative latency and size as 0 and a missing user agent as empty", () => {
    expect(statsFactsOf({ ...request, latency: -5n, responseSize: -1n, userAgent: undefined })).toEqual({
      route: "/a/{id}", statusClass: 2, error: false, latencyUs: 0, bytes: 0, ip: "10.0.0.1", userAgent: "",
    });
  });

  it("cuts long names to their first 256 code points, never inside a character", () => {
    const agent = "😀".repeat(300);
    const facts = statsFactsOf({ ...request, userAgent: agent, urlMapEntry: "/r".repeat(200) });
    expect(Array.from(facts.userAgent)).toHaveLength(maxStatsNameLength);
    expect(facts.userAgent).toBe("😀".repeat(maxStatsNameLength));
    expect(facts.route).toHaveLength(maxStatsNameLength);
  });
});

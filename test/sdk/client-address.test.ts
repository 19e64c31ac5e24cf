import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import { clientAddress, type TrustProxy } from "../../src/sdk/client-address.js";
import { routeTemplate } from "../../src/sdk/route-template.js";

const request = (peer: string, forwardedFor?: string) =>
  ({ socket: { remoteAddress: peer }, headers: forwardedFor === undefined ? {} : { "x-forwarded-for": forwardedFor } }) as unknown as IncomingMessage;

describe("clientAddress", () => {
  const chain = "198.51.100.1, 203.0.113.7";
  it.each<[string, TrustProxy, string, string | undefined, string]>([
    ["no trust: the peer, whatever the header says", false, "10.0.0.2", chain, "10.0.0.2"],
    ["trust 0 proxies: the peer", 0, "10.0.0.2", chain, "10.0.0.2"],
    ["an IPv4 peer on a dual-stack socket", false, "::ffff:192.0.2.9", undefined, "192.0.2.9"],
    ["trust 1 proxy: what the peer forwarded", 1, "10.0.0.2", chain, "203.0.113.7"],
    ["trust 2 proxies: one further back", 2, "10.0.0.2", chain, "198.51.100.1"],
    ["trust 5 proxies with 2 in the header: the first", 5, "10.0.0.2", chain, "198.51.100.1"],
    ["trust all: the first address", true, "10.0.0.2", chain, "198.51.100.1"],
    ["trust all, no header: the peer", true, "10.0.0.2", undefined, "10.0.0.2"],
    ["a trust check: stops at the first address not trusted", (a: string) => a.startsWith("10."), "10.0.0.2", "198.51.100.1, 203.0.113.7, 10.0.0.1", "203.0.113.7"],
    ["a trust check that does not trust the peer: the peer", (a: string) => a === "10.9.9.9", "10.0.0.2", chain, "10.0.0.2"],
    ["an empty entry ends the walk", true, "10.0.0.2", "198.51.100.1, , 203.0.113.7", "203.0.113.7"],
  ])("%s", (_name, trust, peer, header, expected) => {
    expect(clientAddress(request(peer, header), trust)).toBe(expected);
  });
});

describe("routeTemplate", () => {
  it.each([
    ["/api/v1/teams/:id", "/api/v1/teams/{id}"],
    ["/api/v1/repos/:owner/:repo/actions/artifacts/:artifact_id/zip", "/api/v1/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/zip"],
    ["/files/:id(\\d+)", "/files/{id}"],
    ["/maybe/:page?", "/maybe/{page}"],
    ["/raw/*", "/raw/{path*}"],
    ["/raw/*filepath", "/raw/{filepath*}"],
    ["/plain/path", "/plain/path"],
    ["/a:b/c", "/a:b/c"],
  ])("%s is %s", (pattern, template) => {
    expect(routeTemplate(pattern)).toBe(template);
  });
});

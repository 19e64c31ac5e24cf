import { Code } from "@connectrpc/connect";
import { afterEach, describe, expect, it } from "vitest";
import { minimalLog, rid } from "../helpers/fixtures.js";
import { startDnsServer } from "../helpers/dns-server.js";
import { freePort } from "../helpers/local-process.js";
import { createTestClient, failureOf } from "../helpers/test-client.js";
import { startTestServer, type TestServer } from "../helpers/test-server.js";

let servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers) await s.close().catch(() => undefined);
  servers = [];
});

describe("a client of several servers", () => {
  it("sends its calls to each server in turn", async () => {
    servers = [await startTestServer(), await startTestServer()];
    const client = createTestClient({ server: servers.map((s) => s.server.address) });
    try {
      for (const id of ["a", "b", "c", "d"]) await client.write({ log: [minimalLog({ requestId: rid(id) })] });
      const held = await Promise.all(servers.map(async (s) => (await s.stored(rid("a"), rid("b"), rid("c"), rid("d"))).length));
      expect(held).toEqual([2, 2]);
    } finally {
      client.close();
    }
  });

  it("goes on with the others when one is down, failing at most the call that found it down", async () => {
    servers = [await startTestServer(), await startTestServer()];
    const client = createTestClient({ server: servers.map((s) => s.server.address), timeoutMs: 5000 });
    try {
      await servers[0]!.close();
      const failures: Code[] = [];
      for (let i = 0; i < 6; i++) {
        try {
          await client.write({ log: [minimalLog({ requestId: rid(`r${i}`) })] });
        } catch (err) {
          failures.push(failureOf(err).code);
        }
      }
      expect(failures.length).toBeLessThanOrEqual(1);
      expect(failures.every((code) => code === Code.Unavailable)).toBe(true);
      expect((await servers[1]!.stored(...Array.from({ length: 6 }, (_, i) => rid(`r${i}`)))).length).toBe(6 - failures.length);
    } finally {
      client.close();
    }
  });

  it("sends its calls to each address of one name in turn, asking the DNS server of a dns:// target", async () => {
    const port = await freePort();
    servers = [await startTestServer({ listen: `127.0.0.1:${port}` }), await startTestServer({ listen: `127.0.0.2:${port}` })];
    const dns = await startDnsServer({ "reqlog.test": ["127.0.0.1", "127.0.0.2"] });
    const client = createTestClient({ server: `dns://${dns.address}/reqlog.test:${port}` });
    try {
      for (const id of ["a", "b", "c", "d"]) await client.write({ log: [minimalLog({ requestId: rid(id) })] });
      const held = await Promise.all(servers.map(async (s) => (await s.stored(rid("a"), rid("b"), rid("c"), rid("d"))).length));
      expect(held).toEqual([2, 2]);
      expect(dns.queries()).toContain("reqlog.test");
    } finally {
      client.close();
      await dns.stop();
    }
  });

  it("refuses an empty list of servers, saying what it needs", () => {
    expect(() => createTestClient({ server: [] })).toThrow("no reqlog server given: name at least one (HOST:PORT)");
  });
});

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generate } from "selfsigned";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../bench/harness/child-server.js";
import { serverCredentials } from "../../src/grpc/tls.js";
import { Code } from "../../src/reqlog-error.js";
import { callError, createTestClient } from "../helpers/test-client.js";
import { type TestServer, useTestServer } from "../helpers/test-server.js";

const dir = mkdtempSync(join(tmpdir(), "reqlog-tls-"));
const files = { cert: join(dir, "server.crt"), key: join(dir, "server.key") };
let pems: Awaited<ReturnType<typeof generate>>;

beforeAll(async () => {
  // A self-signed server certificate for 127.0.0.1 that is also the CA of a client certificate.
  pems = await generate([{ name: "commonName", value: "127.0.0.1" }], {
    keySize: 2048,
    algorithm: "sha256",
    extensions: [
      { name: "basicConstraints", cA: true },
      { name: "keyUsage", digitalSignature: true, keyEncipherment: true, keyCertSign: true },
      { name: "extKeyUsage", serverAuth: true, clientAuth: true },
      { name: "subjectAltName", altNames: [{ type: 7, ip: "127.0.0.1" }] },
    ],
    clientCertificate: { cn: "forge-app-server" },
  });
  writeFileSync(files.cert, pems.cert);
  writeFileSync(files.key, pems.private);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const read = { appId: "forge" };

/**
 * A Read from a client that does not get through the server's TLS; the
 * failure is the client transport's (Connect's codes for a broken
 * connection), as no call reaches the service.
 */
async function refusal(ts: TestServer, tls?: { ca: string }) {
  const outsider = createTestClient({ server: ts.server.address, tls });
  try {
    return await callError(outsider.read(read));
  } finally {
    outsider.close();
  }
}

describe("TLS", () => {
  describe("with a certificate and key", () => {
    const ts = useTestServer(() => ({ credentials: serverCredentials(files), clientTls: { ca: pems.cert } }));

    it("serves TLS clients that trust its certificate and refuses plaintext", async () => {
      await expect(ts.client.read(read)).resolves.toBeDefined();
      // The TLS port drops the plaintext HTTP/2 connection.
      expect(await refusal(ts)).toEqual({ code: Code.CANCELLED, details: "http/2 stream closed with error code CANCEL (0x8)", reason: undefined });
      const { code, stdout } = await runCli(["read", "--server", ts.server.address, "--app", "forge", "--tls", files.cert]);
      expect({ code, stdout }).toEqual({ code: 0, stdout: "" });
    });
  });

  describe("with --tls-client-ca", () => {
    const ts = useTestServer(() => ({
      credentials: serverCredentials({ ...files, clientCa: files.cert }),
      clientTls: { ca: pems.cert, key: pems.clientprivate!, cert: pems.clientcert! },
    }));

    it("requires a client certificate from the given CA", async () => {
      await expect(ts.client.read(read)).resolves.toBeDefined();
      const noCert = await refusal(ts, { ca: pems.cert });
      expect(noCert).toMatchObject({ code: Code.INTERNAL, reason: undefined });
      expect(noCert.details).toContain("alert certificate required");
    });
  });

  it("names a missing key file", () => {
    expect(() => serverCredentials({ cert: files.cert })).toThrow("TLS needs both --tls-cert and --tls-key");
    expect(() => serverCredentials({ cert: files.cert, key: join(dir, "nope.key") })).toThrow(`cannot read private key ${join(dir, "nope.key")}`);
  });
});

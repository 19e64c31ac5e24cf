import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { credentials, status } from "@grpc/grpc-js";
import { generate } from "selfsigned";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LogReadRequestSchema, LogService } from "../../gen/reqlog/v1/log_service_pb.js";
import { serverCredentials } from "../../src/grpc/tls.js";
import { runCli } from "../../bench/harness/child-server.js";
import { createTestClient, unaryCall } from "../helpers/test-client.js";
import { startTestServer } from "../helpers/test-server.js";

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

const read = create(LogReadRequestSchema, { appId: "forge" });

describe("TLS", () => {
  it("serves TLS clients that trust its certificate and refuses plaintext", async () => {
    const trusted = credentials.createSsl(Buffer.from(pems.cert));
    const ts = await startTestServer({ credentials: serverCredentials(files), clientTls: trusted });
    try {
      await expect(unaryCall(ts.client, "read", read)).resolves.toBeDefined();
      const plain = createTestClient(LogService, ts.server.address);
      const err = await unaryCall(plain, "read", read).catch((e: { code: number }) => e);
      expect((err as { code: number }).code).toBe(status.UNAVAILABLE);
      plain.close();
      const { code, stdout } = await runCli(["read", "--server", ts.server.address, "--app", "forge", "--tls", files.cert]);
      expect({ code, stdout }).toEqual({ code: 0, stdout: "" });
    } finally {
      await ts.close();
    }
  });

  it("requires a client certificate from the given CA with --tls-client-ca", async () => {
    const withCert = credentials.createSsl(Buffer.from(pems.cert), Buffer.from(pems.clientprivate!), Buffer.from(pems.clientcert!));
    const ts = await startTestServer({ credentials: serverCredentials({ ...files, clientCa: files.cert }), clientTls: withCert });
    try {
      await expect(unaryCall(ts.client, "read", read)).resolves.toBeDefined();
      const noCert = createTestClient(LogService, ts.server.address, credentials.createSsl(Buffer.from(pems.cert)));
      const err = await unaryCall(noCert, "read", read).catch((e: { code: number }) => e);
      expect((err as { code: number }).code).toBe(status.UNAVAILABLE);
      noCert.close();
    } finally {
      await ts.close();
    }
  });

  it("names a missing key file", () => {
    expect(() => serverCredentials({ cert: files.cert })).toThrow("TLS needs both --tls-cert and --tls-key");
    expect(() => serverCredentials({ cert: files.cert, key: join(dir, "nope.key") })).toThrow(`cannot read private key ${join(dir, "nope.key")}`);
  });
});

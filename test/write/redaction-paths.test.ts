import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, toBinary, toJson } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ExportLogsServiceRequest,
  ExportLogsServiceRequestSchema,
  LogsService,
} from "../../gen/opentelemetry/proto/collector/logs/v1/logs_service_pb.js";
import type { KeyValue } from "../../gen/opentelemetry/proto/common/v1/common_pb.js";
import {
  IngestRequestSchema,
  LogService,
  type RequestLog,
  RequestLogSchema,
  UserAppLogGroupSchema,
  WriteRequestSchema,
} from "../../gen/reqlog/v1/log_service_pb.js";
import { runCli, startChildServer, type ChildServer } from "../../bench/harness/child-server.js";
import { metadataKeys } from "../../src/service/call-metadata.js";
import { createReqlogClient, log, requestLogger } from "../../src/sdk/index.js";
import { defaultRedactedParams } from "../../src/write/redactor.js";
import { bytesOnDisk, sqliteFiles } from "../helpers/disk-bytes.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { idOf, readAll } from "../helpers/read-all.js";
import { lenientService } from "../helpers/lenient-schema.js";
import { createTestClient, type TestClient } from "../helpers/test-client.js";

/**
 * Credentials of every default shape, each value unique to the path that
 * sends it (`tag`), so a value found on disk names the path that leaked it.
 */
function secretsOf(tag: string) {
  const value = (what: string) => `S3cr3t${tag}${what}Zq`;
  const basic = Buffer.from(`alice:${value("basic")}`).toString("base64");
  const rql = `rql_0123456789abcdef_${value("rql").padEnd(43, "x")}`;
  return {
    /** The forge's signed artifact link, and every default credential parameter after it. */
    resource: `/api/v1/repos/alice/app/actions/artifacts/1/zip/raw?expires=1795609738&${defaultRedactedParams
      .map((name, i) => `${name}=${value(`p${i}`)}`)
      .join("&")}&session=${value("session")}`,
    referrer: `https://alice:${value("userinfo")}@forge.example/alice/app?access_token=${value("ref")}`,
    lines: [
      `upstream refused Authorization: Bearer ${value("bearer")}`,
      `retrying with authorization=Basic ${basic}`,
      `a reqlog token in a line: ${rql}`,
      `{"authorization":"token ${value("tok")}"}`,
      `fetched https://forge.example/x?private_token=${value("pt")} card=4111111111111111`,
    ],
    /** What must be found nowhere: every secret as sent. */
    values: [
      ...defaultRedactedParams.map((_, i) => value(`p${i}`)),
      ...["session", "userinfo", "ref", "bearer", "rql", "tok", "pt"].map(value),
      basic,
      "4111111111111111",
    ],
  };
}

/** Every path a record or line comes in by. */
const paths = ["write", "flush", "ingest", "connect", "otlp-grpc", "otlp-http", "import", "ship", "sdk"] as const;
type PathName = (typeof paths)[number];

const attribute = (key: string, value: string): KeyValue =>
  ({ key, value: { value: { case: "stringValue", value } } }) as KeyValue;

/** An OTLP export of one request (URL-valued attributes) and one app line of another trace. */
function otlpExport(tag: string): ExportLogsServiceRequest {
  const s = secretsOf(tag);
  const time = (t0 + 5_000_000n) * 1000n;
  return create(ExportLogsServiceRequestSchema, {
    resourceLogs: [
      {
        resource: { attributes: [attribute("service.name", "forge"), attribute("service.version", "v1")] },
        scopeLogs: [
          {
            logRecords: [
              {
                timeUnixNano: time,
                traceId: Buffer.from(`${tag}-trace-request`.padEnd(16, "x").slice(0, 16)),
                attributes: [
                  attribute("http.request.method", "GET"),
                  attribute("url.full", `https://forge.example${s.resource}`),
                  attribute("http.request.header.referer", s.referrer),
                  attribute("client.address", "203.0.113.9"),
                ],
              },
              {
                timeUnixNano: time,
                traceId: Buffer.from(`${tag}-trace-lines`.padEnd(16, "x").slice(0, 16)),
                body: { value: { case: "stringValue", value: s.lines.join(" | ") } },
                attributes: [attribute("url.full", `https://forge.example${s.resource}`), attribute("url.query", `token=${secretsOf(tag).values[2]}`)],
              },
            ],
          },
        ],
      },
    ],
  });
}

/** A request record carrying every secret shape, with its lines. */
const recordOf = (tag: string, id: string): RequestLog => {
  const s = secretsOf(tag);
  return minimalLog({
    requestId: rid(id),
    ip: "203.0.113.9",
    resource: s.resource,
    referrer: s.referrer,
    status: 200,
    line: s.lines.map((message, i) => ({ time: t0 + BigInt(i), level: 1, logMessage: message })),
  });
};

/** An access log line of the forge's with the signed link and a credential-carrying referrer. */
const accessLine = (tag: string) => {
  const s = secretsOf(tag);
  return `203.0.113.9 - - [18/Nov/2026:11:06:40 +0000] "GET ${s.resource} HTTP/1.1" 200 12 "${s.referrer}" "git/2.43.0"`;
};

interface Sent {
  server: ChildServer;
  folder: string;
  db: string;
}

/** How to send the secrets by each path to `server`, each with its own tag. */
function senders({ server, folder }: Sent, client: TestClient): Record<PathName, () => Promise<unknown>> {
  const grpcUrl = `http://${server.address}`;
  const httpUrl = `http://${server.httpAddress}`;
  const send: Record<PathName, () => Promise<unknown>> = {
    write: () => client.write(create(WriteRequestSchema, { log: [recordOf("write", "w-1")] })),
    flush: () => {
      const lines = secretsOf("flush").lines.map((message, i) => ({ timestampUsec: t0 + BigInt(i), level: 1n, message }));
      return client.flush(
        { logs: toBinary(UserAppLogGroupSchema, create(UserAppLogGroupSchema, { logLine: lines })) },
        { headers: { [metadataKeys.appId]: "forge", [metadataKeys.versionId]: "v1", [metadataKeys.requestId]: "f-1" } },
      );
    },
    async ingest() {
      const s = secretsOf("ingest");
      async function* batches() {
        yield create(IngestRequestSchema, {
          batchId: 1n,
          log: [recordOf("ingest", "i-1")],
          lines: [{ appId: "forge", versionId: "v1", requestId: rid("i-2"), line: s.lines.map((message, i) => ({ timestampUsec: t0 + BigInt(i), level: 1n, message })) }],
        });
      }
      for await (const ack of client.ingest(batches())) expect(ack.records).toBe(1);
    },
    connect: () => {
      const connect = createClient(lenientService(LogService), createConnectTransport({ baseUrl: httpUrl, httpVersion: "1.1" }));
      return connect.write({ log: [recordOf("connect", "c-1")] });
    },
    async "otlp-grpc"() {
      const otlp = createClient(LogsService, createGrpcTransport({ baseUrl: grpcUrl }));
      const reply = await otlp.export(otlpExport("otlp-grpc"));
      expect(reply.partialSuccess?.rejectedLogRecords ?? 0n).toBe(0n);
    },
    async "otlp-http"() {
      const body = toBinary(ExportLogsServiceRequestSchema, otlpExport("otlp-http"));
      const reply = await fetch(`${httpUrl}/v1/logs`, { method: "POST", headers: { "content-type": "application/x-protobuf" }, body });
      expect(reply.status).toBe(200);
    },
    async import() {
      const file = join(folder, "access.log");
      writeFileSync(file, `${accessLine("import")}\n`);
      const { code, stderr } = await runCli(["import", "--server", server.address, "--app", "forge", "--no-progress", file]);
      expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
    },
    async ship() {
      const file = join(folder, "shipped.log");
      writeFileSync(file, `${accessLine("ship")}\n`);
      const state = join(folder, "ship.state.json");
      const { code, stderr } = await runCli(["ship", "--server", server.address, "--app", "forge", "--state", state, file]);
      expect(code, stderr).toBe(0);
    },
    async sdk() {
      const s = secretsOf("sdk");
      const reqlog = createReqlogClient({ server: server.address, app: "forge", version: "sdk" });
      const app = createServer((req, res) =>
        requestLogger(reqlog)(req, res, () => {
          for (const line of s.lines) log.info(line);
          res.end("ok");
        }),
      );
      await new Promise<void>((resolve) => app.listen(0, "127.0.0.1", resolve));
      const { port } = app.address() as { port: number };
      try {
        const answer = await fetch(`http://127.0.0.1:${port}${s.resource}`, { headers: { referer: s.referrer } });
        expect(await answer.text()).toBe("ok");
        await reqlog.flush();
      } finally {
        app.close();
        await reqlog.close();
      }
    },
  };
  return send;
}

/** Everything a reader of the app sees: every record and line, as JSON. */
async function everythingStored(client: TestClient): Promise<string> {
  const stored = await readAll(client, "forge");
  return JSON.stringify(stored.map((r) => toJson(RequestLogSchema, r)));
}

async function startServer(args: string[]): Promise<Sent> {
  const folder = mkdtempSync(join(tmpdir(), "reqlog-redaction-"));
  const db = join(folder, "reqlog.db");
  const server = await startChildServer(["--listen", "127.0.0.1:0", "--db", db, "--log-level", "trace", ...args]);
  return { server, folder, db };
}

describe.each([
  { workers: "0", what: "on the main thread" },
  { workers: "1", what: "on a prepare worker" },
])("redaction at ingest, every path, Write and Ingest decoded $what", ({ workers }) => {
  let sent: Sent;
  let client: TestClient;
  beforeAll(async () => {
    sent = await startServer(["--prepare-workers", workers, "--redact-param", "session", "--redact-pattern", "card=(\\d+)"]);
    client = createTestClient({ server: sent.server.address });
    const send = senders(sent, client);
    for (const path of paths) await send[path]();
  }, 120_000);
  afterAll(async () => {
    client?.close();
    await sent?.server.stop();
    rmSync(sent.folder, { recursive: true, force: true });
  });

  it("stores every path's records and lines with each default secret shape redacted", async () => {
    const stored = await readAll(client, "forge");
    const text = await everythingStored(client);
    for (const path of paths) {
      for (const secret of secretsOf(path).values) expect(text, `${path}: ${secret}`).not.toContain(secret);
    }
    // Every path arrived (the SDK's, the OTLP ones and the access logs' under ids of their own).
    const redactedRecords = stored.filter((r) => r.resource.includes("sig=REDACTED"));
    expect(redactedRecords.length).toBe(8);
    const write = stored.find((r) => idOf(r) === "w-1")!;
    expect(write.resource).toBe(
      `/api/v1/repos/alice/app/actions/artifacts/1/zip/raw?expires=1795609738&${defaultRedactedParams.map((n) => `${n}=REDACTED`).join("&")}&session=REDACTED`,
    );
    expect(write.referrer).toBe("https://REDACTED@forge.example/alice/app?access_token=REDACTED");
    expect(write.combined).toContain(`"GET ${write.resource}" 200`);
    expect(write.combined).toContain('"https://REDACTED@forge.example/alice/app?access_token=REDACTED"');
    expect(write.line.map((l) => l.logMessage)).toEqual([
      "upstream refused Authorization: Bearer REDACTED",
      "retrying with authorization=Basic REDACTED",
      "a reqlog token in a line: rql_0123456789abcdef_REDACTED",
      '{"authorization":"token REDACTED"}',
      "fetched https://forge.example/x?private_token=REDACTED card=REDACTED",
    ]);
    // The access logs' own lines are kept as combined, redacted as the fields are.
    const imported = stored.filter((r) => r.versionId === "access-log");
    expect(imported.length).toBe(2);
    for (const r of imported) {
      expect(r.resource).toBe(write.resource);
      expect(r.combined).toContain(`"GET ${write.resource} HTTP/1.1" 200 12 "${write.referrer}"`);
    }
  });

  it("leaves no secret in the SQLite file or its WAL", () => {
    const values = paths.flatMap((p) => secretsOf(p).values);
    expect(bytesOnDisk(sqliteFiles(sent.db), values)).toEqual({});
  });

  it("finds a stored record by a regex on its redacted text, and none by the secret", async () => {
    const bySecret = await client.read({ appId: "forge", combinedLogRegex: secretsOf("write").values[0]! });
    expect(bySecret.log).toEqual([]);
    const byMarker = await client.read({ appId: "forge", combinedLogRegex: "sig=REDACTED&signature=REDACTED", count: 100n });
    expect(byMarker.log.length).toBe(8);
  });

  it("never prints a token or a secret in the server's own log, even at trace level", async () => {
    // Calls the server refuses, with secrets in them: a bad token, a record it rejects.
    const token = `rql_0123456789abcdef_${"S3cr3tLogToken".padEnd(43, "y")}`;
    const withToken = createTestClient({ server: sent.server.address, token });
    await expect(withToken.read({ appId: "forge" })).rejects.toThrow(/invalid or revoked access token|lacks/);
    withToken.close();
    const bad = recordOf("refused", "r-1");
    bad.endTime = 1n;
    await expect(client.write({ log: [bad] })).rejects.toThrow(/before/);
    const logged = sent.server.stderr();
    expect(logged).toContain('"reqlog serving"');
    for (const secret of [...paths.flatMap((p) => secretsOf(p).values), ...secretsOf("refused").values, "S3cr3tLogToken"]) {
      expect(logged).not.toContain(secret);
    }
  });
});

describe("with redaction turned off", () => {
  let sent: Sent;
  beforeAll(async () => {
    sent = await startServer(["--no-default-redaction", "--redact-param", "expires"]);
  });
  afterAll(async () => {
    await sent?.server.stop();
    rmSync(sent.folder, { recursive: true, force: true });
  });

  it("stores the secrets as sent (so the byte search above would find them), only the operator's names redacted", async () => {
    const client = createTestClient({ server: sent.server.address });
    await client.write({ log: [recordOf("off", "o-1")] });
    const [stored] = await readAll(client, "forge");
    client.close();
    expect(stored!.resource).toContain("zip/raw?expires=REDACTED&sig=S3cr3toffp0Zq");
    const found = bytesOnDisk(sqliteFiles(sent.db), secretsOf("off").values);
    expect(Object.keys(found).sort()).toEqual([...secretsOf("off").values].sort());
  });

  it("gets the SDK's records redacted all the same: the request logger redacts before it sends", async () => {
    const client = createTestClient({ server: sent.server.address });
    await senders(sent, client).sdk();
    const [stored] = (await readAll(client, "forge")).filter((r) => r.versionId === "sdk");
    client.close();
    // expires by the server's --redact-param; the rest by the SDK (session is neither's).
    expect(stored!.resource).toContain("zip/raw?expires=REDACTED&sig=REDACTED&signature=REDACTED");
    expect(stored!.resource).toContain("&session=S3cr3tsdksessionZq");
    expect(stored!.referrer).toBe("https://REDACTED@forge.example/alice/app?access_token=REDACTED");
    expect(stored!.line.map((l) => l.logMessage)[0]).toBe("upstream refused Authorization: Bearer REDACTED");
    expect(bytesOnDisk(sqliteFiles(sent.db), secretsOf("sdk").values.filter((v) => v !== "4111111111111111" && !v.includes("session")))).toEqual({});
  });
});

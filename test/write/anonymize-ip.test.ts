import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { describe, expect, it } from "vitest";
import { ExportLogsServiceRequestSchema, LogsService } from "../../gen/opentelemetry/proto/collector/logs/v1/logs_service_pb.js";
import type { KeyValue } from "../../gen/opentelemetry/proto/common/v1/common_pb.js";
import { runCli } from "../../bench/harness/child-server.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { idOf, readAll } from "../helpers/read-all.js";
import { useTestServer } from "../helpers/test-server.js";

const attribute = (key: string, value: string): KeyValue => ({ key, value: { value: { case: "stringValue", value } } }) as KeyValue;

describe("--anonymize-ip", () => {
  const ts = useTestServer({ privacy: { anonymizeIp: true } });

  it("stores client IPs with the host part zeroed by every path, in the record, its combined line and Stats' top IPs", async () => {
    await ts.write(
      minimalLog({ requestId: rid("v4"), ip: "203.0.113.77", endTime: t0 + 1000n, status: 200 }),
      minimalLog({ requestId: rid("v6"), ip: "2001:db8:85a3:8d3:1319:8a2e:370:7348", endTime: t0 + 1000n, status: 200 }),
      minimalLog({ requestId: rid("name"), ip: "gateway.internal", endTime: t0 + 1000n, status: 200 }),
    );
    const folder = mkdtempSync(join(tmpdir(), "reqlog-anonymize-"));
    try {
      const file = join(folder, "access.log");
      writeFileSync(
        file,
        [
          '198.51.100.23 - - [18/Nov/2026:11:06:40 +0000] "GET /api/v1/teams/1 HTTP/1.1" 200 12 "-" "git/2.43.0"',
          '198.51.100.24:51234 - - [18/Nov/2026:11:06:41 +0000] "GET /api/v1/teams/2 HTTP/1.1" 200 12 "-" "git/2.43.0"',
        ].join("\n") + "\n",
      );
      const imported = await runCli(["import", "--server", ts.server.address, "--app", "forge", "--no-progress", file]);
      expect(imported.code, imported.stderr).toBe(0);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
    const otlp = createClient(LogsService, createGrpcTransport({ baseUrl: `http://${ts.server.address}` }));
    await otlp.export(
      create(ExportLogsServiceRequestSchema, {
        resourceLogs: [
          {
            resource: { attributes: [attribute("service.name", "forge")] },
            scopeLogs: [
              {
                logRecords: [
                  {
                    timeUnixNano: (t0 + 2000n) * 1000n,
                    traceId: Buffer.from("otlp-anonymized!"),
                    attributes: [attribute("http.request.method", "GET"), attribute("url.path", "/otlp"), attribute("client.address", "192.0.2.200")],
                  },
                ],
              },
            ],
          },
        ],
      }),
    );

    const stored = new Map((await readAll(ts.client, "forge")).map((r) => [r.resource === "/otlp" ? "otlp" : idOf(r).startsWith("v") || idOf(r) === "name" ? idOf(r) : r.resource, r]));
    expect(stored.get("v4")!.ip).toBe("203.0.113.0");
    expect(stored.get("v4")!.combined).toMatch(/^203\.0\.113\.0 - /);
    expect(stored.get("v6")!.ip).toBe("2001:db8:85a3::");
    expect(stored.get("name")!.ip).toBe("gateway.internal");
    expect(stored.get("/api/v1/teams/1")!.ip).toBe("198.51.100.0");
    expect(stored.get("/api/v1/teams/1")!.combined).toMatch(/^198\.51\.100\.0 - - \[18\/Nov\/2026:11:06:40 \+0000\] "GET \/api\/v1\/teams\/1/);
    expect(stored.get("/api/v1/teams/2")!.ip).toBe("198.51.100.0");
    expect(stored.get("/api/v1/teams/2")!.combined).toMatch(/^198\.51\.100\.0:51234 - - /);
    expect(stored.get("otlp")!.ip).toBe("192.0.2.0");

    const stats = await ts.client.stats({ appId: "forge", topN: 10 });
    expect(stats.topClientIp.map((c) => [c.name, c.requests]).sort()).toEqual(
      [["198.51.100.0", 2n], ["192.0.2.0", 1n], ["2001:db8:85a3::", 1n], ["203.0.113.0", 1n], ["gateway.internal", 1n]].sort(),
    );
  });
});

describe("without --anonymize-ip", () => {
  const ts = useTestServer();

  it("stores client IPs as sent", async () => {
    await ts.write(minimalLog({ requestId: rid("v4"), ip: "203.0.113.77", endTime: t0 + 1000n }));
    const [stored] = await readAll(ts.client, "forge");
    expect(stored!.ip).toBe("203.0.113.77");
  });
});

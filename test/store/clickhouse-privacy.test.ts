import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { runCli, startChildServer, type ChildServer } from "../../bench/harness/child-server.js";
import { type ClickHouseServer, startClickHouse } from "../helpers/clickhouse-server.js";
import { bytesOnDisk } from "../helpers/disk-bytes.js";
import { minimalLog, rid, t0 } from "../helpers/fixtures.js";
import { eventually, idOf, readAll } from "../helpers/read-all.js";
import { createTestClient, type TestClient } from "../helpers/test-client.js";

// Starting ClickHouse may first install it (apt-get); its mutations and part cleanup run in the background.
vi.setConfig({ hookTimeout: 600_000, testTimeout: 120_000 });

/**
 * A value that shares no four characters with anything before it (random,
 * 64 symbols, no common prefix): LZ4 then keeps its first occurrence in a
 * column's compressed file literal, so a byte search of the data folder
 * finds it wherever it is stored.
 */
const unique = () => randomBytes(18).toString("base64url");

/** Requests of 203.0.113.9 (two) and 198.51.100.1 (one), each with default secret shapes and one reqlog does not know. */
function seed() {
  return ["203.0.113.9", "198.51.100.1", "203.0.113.9"].map((ip, i) => {
    const secret = { sig: unique(), token: unique(), bearer: unique(), session: unique() };
    return {
      ip,
      secret,
      log: minimalLog({
        requestId: rid(`k${i}`),
        ip,
        endTime: t0 + BigInt(i) * 1000n,
        resource: `/api/v1/repos/alice/app/actions/artifacts/${i}/zip/raw?expires=1795609738&sig=${secret.sig}&session=${secret.session}`,
        referrer: `https://forge.example/alice/app?access_token=${secret.token}`,
        userAgent: `agent-${secret.session}`,
        line: [{ time: t0, level: 3, logMessage: `upstream refused Authorization: Bearer ${secret.bearer}; session=${secret.session}` }],
      }),
    };
  });
}

describe("reqlog serve --store clickhouse: the data folder byte for byte", () => {
  let clickhouse: ClickHouseServer;
  let server: ChildServer;
  let client: TestClient;
  const database = `reqlog_privacy_${process.pid}`;
  const requests = seed();

  /** Which of `needles` ClickHouse holds anywhere in its data folder. */
  const onDisk = (needles: string[]) => Object.keys(bytesOnDisk([clickhouse.dataPath], needles)).sort();

  /** Waits until the database's mutations are done and the parts they replaced have left the disk. */
  async function settled(): Promise<void> {
    const count = async (query: string) => {
      const result = await clickhouse.client.query({ query, format: "JSONEachRow" });
      return Number(((await result.json()) as { n: string }[])[0]!.n);
    };
    await eventually(
      async () =>
        (await count(`SELECT count() AS n FROM system.mutations WHERE database = '${database}' AND is_done = 0`)) +
          (await count(`SELECT count() AS n FROM system.parts WHERE database = '${database}' AND active = 0`)) ===
        0,
      "ClickHouse's mutations done and replaced parts removed",
      90_000,
    );
  }

  beforeAll(async () => {
    // Replaced parts leave the disk after a second (ClickHouse's default is 8 minutes: docs/privacy.md).
    clickhouse = await startClickHouse({ name: "reqlog-privacy-clickhouse-", oldPartsLifetime: 1 });
    server = await startChildServer(["--listen", "127.0.0.1:0", "--store", "clickhouse", "--clickhouse-database", database], {
      REQLOG_CLICKHOUSE_URL: clickhouse.url,
    });
    client = createTestClient({ server: server.address });
  });
  afterAll(async () => {
    client?.close();
    await server?.stop();
    await clickhouse?.stop();
  });

  it("holds no default secret after writes, only the one reqlog does not know", async () => {
    await client.write({ log: requests.map((r) => r.log) });
    await settled();
    const known = requests.flatMap((r) => [r.secret.sig, r.secret.token, r.secret.bearer]);
    const unknown = requests.map((r) => r.secret.session);
    expect(onDisk(known)).toEqual([]);
    // The search does find what is stored: the shape redaction does not know is there until deleted.
    expect(onDisk(unknown)).toEqual([...unknown].sort());
    const [stored] = await readAll(client, "forge");
    expect(stored!.resource).toBe(`/api/v1/repos/alice/app/actions/artifacts/2/zip/raw?expires=1795609738&sig=REDACTED&session=${requests[2]!.secret.session}`);
  });

  it("holds none of a deleted request's text once its mutation is done and the old parts are gone", async () => {
    const deleted = await runCli(["delete", "--server", server.address, "--app", "forge", "--ip", "203.0.113.9"]);
    expect(deleted).toEqual({ code: 0, stdout: 'deleted 2 requests of app "forge", with their app lines\n', stderr: "" });
    expect((await readAll(client, "forge")).map(idOf)).toEqual(["k1"]);
    await settled();
    expect(onDisk([requests[0]!.secret.session, requests[2]!.secret.session])).toEqual([]);
    expect(onDisk([requests[1]!.secret.session])).toEqual([requests[1]!.secret.session]);
  });
});

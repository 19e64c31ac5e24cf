import { LogService } from "../../gen/reqlog/v1/log_service_pb.js";
import type { Clock } from "../../src/clock.js";
import { createAuthorizer } from "../../src/auth/authorizer.js";
import { createTokenStore, type TokenStore } from "../../src/auth/token-store.js";
import { startServer, type RunningServer } from "../../src/grpc/server.js";
import { defaultLimits, type Limits } from "../../src/limits.js";
import { createLogger } from "../../src/logger.js";
import { openDatabase } from "../../src/store/sqlite/open-database.js";
import { createSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { createTestClient, type TestClient } from "./test-client.js";
import type Database from "better-sqlite3";
import type { ChannelCredentials, ServerCredentials } from "@grpc/grpc-js";

export interface TestServer {
  server: RunningServer;
  client: TestClient;
  store: Store;
  tokens: TokenStore;
  /** The same database the store uses, for checks on raw rows. */
  db: Database.Database;
  /** Sets the injected clock (microseconds). */
  setNow(usec: bigint): void;
  close(): Promise<void>;
}

/** A real server on 127.0.0.1:0 over a fresh SQLite database, with a controlled clock. */
export async function startTestServer(
  options: {
    limits?: Partial<Limits>;
    dbPath?: string;
    now?: bigint;
    readWorkers?: number;
    /** The rate limiter's clock (ms). */
    monotonicNow?: () => number;
    /** TLS for the server (and then the test client trusts `clientTls`). */
    credentials?: ServerCredentials;
    clientTls?: ChannelCredentials;
  } = {},
): Promise<TestServer> {
  let now = options.now ?? 1_795_000_000_000_000n;
  const clock: Clock = () => now;
  const db = openDatabase({ path: options.dbPath ?? ":memory:" });
  const store = createSqliteStore(db, clock, { readWorkers: options.readWorkers });
  const limits = { ...defaultLimits, ...options.limits };
  const tokens = createTokenStore(db, clock);
  const auth = createAuthorizer(tokens, { callsPerSecond: limits.rateLimit, now: options.monotonicNow });
  const server = await startServer(
    { store, limits, auth },
    { listen: "127.0.0.1:0", shutdownTimeoutMs: 2000, logger: createLogger("silent"), credentials: options.credentials },
  );
  const client = createTestClient(LogService, server.address, options.clientTls);
  return {
    server,
    client,
    store,
    tokens,
    db,
    setNow(usec) {
      now = usec;
    },
    async close() {
      client.close();
      await server.shutdown();
    },
  };
}

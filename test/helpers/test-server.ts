import { mkdtempSync, rmSync } from "node:fs";
import type { SecureClientSessionOptions } from "node:http2";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import type { ServerCredentials } from "@grpc/grpc-js";
import { afterEach, beforeEach } from "vitest";
import {
  type LogReadRequestSchema,
  type LogReadResponse,
  type RequestLog,
  WriteRequestSchema,
  type WriteResponse,
} from "../../gen/reqlog/v1/log_service_pb.js";
import type { RunningServer } from "../../src/grpc/server.js";
import { dashboardPages } from "../../src/http/dashboard-pages.js";
import { defaultLimits, type Limits } from "../../src/limits.js";
import { createLogger } from "../../src/logger.js";
import { type ConnectionLimits, defaultConnectionLimits } from "../../src/net/connection-guard.js";
import { type ReqlogServer, type ReqlogServerOptions, startReqlogServer } from "../../src/reqlog-server.js";
import { openSqliteBackend, type SqliteBackend } from "../../src/store/sqlite/sqlite-backend.js";
import { defaultPrivacyOptions, type PrivacyOptions } from "../../src/write/privacy.js";
import { t0 } from "./fixtures.js";
import { createTestClient, type TestClient } from "./test-client.js";

export interface TestServerOptions {
  /** HOST:PORT of the gRPC port (default 127.0.0.1:0, a free port). */
  listen?: string;
  limits?: Partial<Limits>;
  /** The database file; a fresh one in a temporary folder (removed on close) by default. */
  dbPath?: string;
  /** The injected clock's start (µs). */
  now?: bigint;
  /** Read worker threads (default 2, as in production). */
  readWorkers?: number;
  /** The rate limiter's clock (ms). */
  monotonicNow?: () => number;
  /** Also serve the HTTP port (Connect, gRPC-Web, gRPC, /metrics) on a free port. */
  http?: boolean;
  /** Serve the dashboard (as built in dist/web by `npm run build`) on the HTTP port (with `http`). */
  dashboard?: boolean;
  /** Threads that decode large Writes and Ingest batches (default 0, as in production). */
  prepareWorkers?: number;
  /** The request metrics and log-based metrics on /metrics (with `http`). */
  appMetrics?: ReqlogServerOptions["appMetrics"];
  /** Alertmanager whose alerts the Alerts RPC shows. */
  alertmanager?: ReqlogServerOptions["alertmanager"];
  /** Connections held on each port and their timeouts (the defaults otherwise). */
  connections?: Partial<ConnectionLimits>;
  /** TLS for the server; the client then connects with `clientTls`. */
  credentials?: ServerCredentials;
  clientTls?: SecureClientSessionOptions;
  /** Redaction and IP anonymisation (default: as `reqlog serve` with no privacy flags). */
  privacy?: Partial<PrivacyOptions>;
}

/** Read request fields, as a test writes them. */
export type ReadInit = Omit<Exclude<MessageInitShape<typeof LogReadRequestSchema>, { $typeName: string }>, "$typeName">;

export interface TestServer {
  server: RunningServer;
  /** The HTTP port's address, when the options asked for one. */
  httpAddress: string | undefined;
  /** The threads that decode large Writes and Ingest batches. */
  prepare: ReqlogServer["prepare"];
  /** The client of the server (no token). */
  client: TestClient;
  /** The backend the server runs on: its store, tokens, maintenance and raw database. */
  backend: SqliteBackend;
  /** A further client of the server, with a token or other options. */
  connect(options?: { token?: string }): TestClient;
  /** The raw database, for checks on stored rows. */
  db: SqliteBackend["db"];
  /** Writes records with Write. */
  write(...logs: RequestLog[]): Promise<WriteResponse>;
  /** The stored records of app "forge" with these request ids, as the store returns them. */
  stored(...requestIds: Uint8Array[]): Promise<RequestLog[]>;
  /** Reads one page of the app "forge" unless the request names another. */
  read(init?: ReadInit): Promise<LogReadResponse>;
  /** Sets the injected clock (µs). */
  setNow(usec: bigint): void;
  close(): Promise<void>;
}

/**
 * A real server on 127.0.0.1:0, wired as `reqlog serve` wires it, over a
 * SQLite file database with read workers on and a controlled clock.
 */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  let now = options.now ?? t0;
  const folder = options.dbPath ? undefined : mkdtempSync(join(tmpdir(), "reqlog-test-"));
  const backend = openSqliteBackend({
    path: options.dbPath ?? join(folder!, "reqlog.db"),
    readWorkers: options.readWorkers,
    now: () => now,
    requestLines: { ...defaultLimits, ...options.limits },
  });
  const reqlog = await startReqlogServer(backend, {
    listen: options.listen ?? "127.0.0.1:0",
    httpListen: options.http ? "127.0.0.1:0" : undefined,
    pages: options.dashboard ? [dashboardPages()] : undefined,
    limits: { ...defaultLimits, ...options.limits },
    logger: createLogger("silent"),
    shutdownTimeoutMs: 2000,
    credentials: options.credentials,
    monotonicNow: options.monotonicNow,
    prepareWorkers: options.prepareWorkers,
    privacy: { ...defaultPrivacyOptions, ...options.privacy },
    appMetrics: options.appMetrics,
    alertmanager: options.alertmanager,
    connections: { ...defaultConnectionLimits, ...options.connections },
  });
  const server = reqlog.grpc;
  const clients: TestClient[] = [];
  const connect = (more: { token?: string } = {}) => {
    const client = createTestClient({ server: server.address, tls: options.clientTls, token: more.token });
    clients.push(client);
    return client;
  };
  const client = connect();
  return {
    server,
    httpAddress: reqlog.http?.address,
    prepare: reqlog.prepare,
    client,
    backend,
    connect,
    db: backend.db,
    write: (...logs) => client.write(create(WriteRequestSchema, { log: logs })),
    stored: (...requestIds) => backend.store.getRequests("forge", requestIds, new AbortController().signal),
    read: (init = {}) => client.read({ appId: "forge", ...init }),
    setNow(usec) {
      now = usec;
    },
    async close() {
      for (const c of clients) c.close();
      await reqlog.shutdown();
      await backend.close();
      if (folder) rmSync(folder, { recursive: true, force: true });
    },
  };
}

/**
 * A test server for each test of the file (or describe block): started
 * before each test, stopped after. The object returned stands for the
 * current one.
 */
const methods = new Set<keyof TestServer>(["connect", "write", "stored", "read", "setNow", "close"]);

export function useTestServer(options: TestServerOptions | (() => TestServerOptions) = {}): TestServer {
  let current: TestServer | undefined;
  beforeEach(async () => {
    current = await startTestServer(typeof options === "function" ? options() : options);
  });
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });
  const now = () => {
    if (!current) throw new Error("the test server runs only inside a test");
    return current;
  };
  return new Proxy({} as TestServer, {
    get(_, key: keyof TestServer) {
      // Methods may be taken at load time (const write = ts.write): they call the current server's.
      if (methods.has(key)) return (...args: never[]) => (now()[key] as (...a: never[]) => unknown)(...args);
      return now()[key];
    },
  });
}

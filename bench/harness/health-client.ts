import { type Client, createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { Health } from "../../gen/health/v1/health_pb.js";

/** A client of the standard gRPC health service, with its connection. */
export type HealthClient = Client<typeof Health> & {
  /** Closes the HTTP/2 connection. */
  close(): void;
};

/** A client of a plaintext server's health service (HOST:PORT), over gRPC as the LogService client speaks it. */
export function createHealthClient(address: string): HealthClient {
  const url = `http://${address}`;
  const sessions = new Http2SessionManager(url);
  const client = createClient(Health, createGrpcTransport({ baseUrl: url, sessionManager: sessions }));
  return Object.assign(client, { close: () => sessions.abort() });
}

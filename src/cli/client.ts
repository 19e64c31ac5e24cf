import { readFileSync } from "node:fs";
import { type DescService } from "@bufbuild/protobuf";
import {
  type Client,
  type ClientReadableStream,
  credentials,
  makeGenericClientConstructor,
  Metadata,
  type ServiceError,
} from "@grpc/grpc-js";
import { clientDefinition } from "../grpc/service-definition.js";

/** A small promise-based client for the CLI commands. */
export interface CliClient {
  unary<Res>(method: string, request: unknown): Promise<Res>;
  /** A unary call with extra call metadata (e.g. Flush's request context). */
  unaryWith<Res>(method: string, request: unknown, extra: Record<string, string>): Promise<Res>;
  stream<Res>(method: string, request: unknown): ClientReadableStream<Res>;
  close(): void;
}

/** How the CLI reaches the server. */
export interface Connection {
  server: string;
  /** Bearer token (REQLOG_TOKEN). */
  token?: string;
  /** TLS: true for the system's roots, or a CA file (PEM). */
  tls?: boolean | string;
}

export function createCliClient(service: DescService, connection: Connection | string): CliClient {
  const { server, token, tls } = typeof connection === "string" ? { server: connection } : connection;
  const Ctor = makeGenericClientConstructor(clientDefinition(service), service.typeName);
  const channel = tls
    ? credentials.createSsl(typeof tls === "string" ? readFileSync(tls) : null)
    : credentials.createInsecure();
  const client = new Ctor(server, channel, {
    "grpc.max_receive_message_length": -1,
  }) as Client & Record<string, (...args: unknown[]) => unknown>;
  const metadata = () => {
    const md = new Metadata();
    if (token) md.set("authorization", `Bearer ${token}`);
    return md;
  };
  return {
    unary<Res>(method: string, request: unknown) {
      return this.unaryWith<Res>(method, request, {});
    },
    unaryWith<Res>(method: string, request: unknown, extra: Record<string, string>) {
      const md = metadata();
      for (const [k, v] of Object.entries(extra)) md.set(k, v);
      return new Promise<Res>((resolve, reject) =>
        (client[method] as (r: unknown, md: Metadata, cb: (e: ServiceError | null, r: Res) => void) => void)(
          request,
          md,
          (err, res) => (err ? reject(err) : resolve(res)),
        ),
      );
    },
    stream<Res>(method: string, request: unknown) {
      return (client[method] as (r: unknown, md: Metadata) => ClientReadableStream<Res>)(request, metadata());
    },
    close() {
      client.close();
    },
  };
}

/** The message of a failed call, for a CLI error line. */
export function callFailure(err: unknown): string {
  const e = err as Partial<ServiceError>;
  if (typeof e.code === "number" && typeof e.details === "string") return e.details || `gRPC status ${e.code}`;
  return err instanceof Error ? err.message : String(err);
}

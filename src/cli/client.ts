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
  stream<Res>(method: string, request: unknown): ClientReadableStream<Res>;
  close(): void;
}

export function createCliClient(service: DescService, address: string): CliClient {
  const Ctor = makeGenericClientConstructor(clientDefinition(service), service.typeName);
  const client = new Ctor(address, credentials.createInsecure(), {
    "grpc.max_receive_message_length": -1,
  }) as Client & Record<string, (...args: unknown[]) => unknown>;
  return {
    unary<Res>(method: string, request: unknown) {
      return new Promise<Res>((resolve, reject) =>
        (client[method] as (r: unknown, md: Metadata, cb: (e: ServiceError | null, r: Res) => void) => void)(
          request,
          new Metadata(),
          (err, res) => (err ? reject(err) : resolve(res)),
        ),
      );
    },
    stream<Res>(method: string, request: unknown) {
      return (client[method] as (r: unknown, md: Metadata) => ClientReadableStream<Res>)(request, new Metadata());
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

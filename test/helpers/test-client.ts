import { type DescMessage, type DescService, fromBinary, type MessageShape, toBinary } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import {
  type ChannelCredentials,
  type Client,
  credentials,
  makeGenericClientConstructor,
  Metadata,
  type ServiceError,
} from "@grpc/grpc-js";
import { ErrorInfoSchema, StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { type ClientCodec, clientDefinition } from "../../src/grpc/service-definition.js";
import { missingRequiredFields } from "../../src/write/required-fields.js";
import { lenient } from "./lenient-schema.js";

/**
 * A strict client: requests are encoded leniently (tests may leave required
 * fields out on purpose), but every reply is checked as a strict proto2
 * client would: a reply missing a required field fails the call.
 */
const strictRepliesCodec: ClientCodec = {
  encode: (schema, message) => toBinary(lenient(schema), message as MessageShape<DescMessage>),
  decode(schema, bytes) {
    const message = fromBinary(schema, bytes);
    const missing = missingRequiredFields(schema, message);
    if (missing.length > 0) throw new Error(`reply ${schema.typeName} lacks required fields: ${missing.join(", ")}`);
    return message;
  },
};

export type TestClient = Client & Record<string, (...args: unknown[]) => unknown>;

export function createTestClient(service: DescService, address: string, tls?: ChannelCredentials): TestClient {
  const Ctor = makeGenericClientConstructor(clientDefinition(service, strictRepliesCodec), service.typeName);
  return new Ctor(address, tls ?? credentials.createInsecure(), {
    "grpc.max_send_message_length": -1,
    "grpc.max_receive_message_length": -1,
  }) as unknown as TestClient;
}

/** Calls a unary method; resolves with the reply or rejects with the ServiceError. */
export function unaryCall<Res>(
  client: TestClient,
  method: string,
  request: unknown,
  metadata: Record<string, string | Buffer> = {},
): Promise<Res> {
  const md = new Metadata();
  for (const [k, v] of Object.entries(metadata)) md.set(k, v);
  return new Promise((resolve, reject) => {
    (client[method] as (req: unknown, md: Metadata, cb: (err: ServiceError | null, res: Res) => void) => void)(
      request,
      md,
      (err, res) => (err ? reject(err) : resolve(res)),
    );
  });
}

/** The ErrorInfo reason a failed call carries in grpc-status-details-bin. */
export function errorReason(err: ServiceError): string | undefined {
  const raw = err.metadata?.get("grpc-status-details-bin")[0];
  if (raw === undefined) return undefined;
  const status = fromBinary(StatusSchema, raw as Buffer);
  for (const detail of status.details) {
    const info = anyUnpack(detail, ErrorInfoSchema);
    if (info) return info.reason;
  }
  return undefined;
}

/** Awaits a call expected to fail; returns code, message and ErrorInfo reason. */
export async function callError(
  call: Promise<unknown>,
): Promise<{ code: number; details: string; reason: string | undefined }> {
  try {
    await call;
  } catch (err) {
    const e = err as ServiceError;
    return { code: e.code, details: e.details, reason: errorReason(e) };
  }
  throw new Error("the call succeeded but was expected to fail");
}

/** Sends raw bytes as the request of a unary method (for malformed messages). */
export function rawUnaryCall(client: TestClient, path: string, bytes: Uint8Array): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(
      path,
      (b: Buffer) => b,
      (b: Buffer) => b,
      Buffer.from(bytes),
      (err, res) => (err ? reject(err) : resolve(res!)),
    );
  });
}

import { connect, type IncomingHttpHeaders } from "node:http2";
import { type DescMessage, fromBinary, type Message } from "@bufbuild/protobuf";
import { ConnectError, type Interceptor } from "@connectrpc/connect";
import { ErrorInfoSchema, StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { LogService } from "../../gen/reqlog/v1/log_service_pb.js";
import { type ClientOptions, createLogServiceClient, type LogServiceClient } from "../../src/client/log-service-client.js";
import { missingRequiredFields } from "../../src/write/required-fields.js";
import { lenientService } from "./lenient-schema.js";

function checkReply(schema: DescMessage, message: Message): void {
  const missing = missingRequiredFields(schema, message);
  if (missing.length > 0) throw new Error(`reply ${schema.typeName} lacks required fields: ${missing.join(", ")}`);
}

/** Fails a call whose reply (or any streamed reply) lacks a required field, as a strict proto2 client would. */
const strictReplies: Interceptor = (next) => async (req) => {
  const res = await next(req);
  const strict = LogService.method[req.method.localName as keyof typeof LogService.method]?.output ?? req.method.output;
  if (!res.stream) {
    checkReply(strict, res.message);
    return res;
  }
  const messages = res.message;
  return {
    ...res,
    message: (async function* () {
      for await (const message of messages) {
        checkReply(strict, message);
        yield message;
      }
    })(),
  };
};

export type TestClient = LogServiceClient;

/**
 * The tests' client: typed from the generated service, but requests encode
 * leniently (a test may leave required fields out on purpose, as a careless
 * or hostile client could), and every reply is checked as a strict proto2
 * client checks it.
 */
export function createTestClient(options: ClientOptions): TestClient {
  return createLogServiceClient({
    ...options,
    service: lenientService(LogService),
    interceptors: [strictReplies, ...(options.interceptors ?? [])],
  });
}

/** A failed call as the tests look at it: status code, message, ErrorInfo reason. */
export interface CallFailure {
  code: number;
  details: string;
  reason: string | undefined;
}

export function failureOf(err: unknown): CallFailure {
  const e = ConnectError.from(err);
  return { code: e.code, details: e.rawMessage, reason: e.findDetails(ErrorInfoSchema)[0]?.reason };
}

/** Awaits a call expected to fail; returns code, message and ErrorInfo reason. */
export async function callError(call: Promise<unknown>): Promise<CallFailure> {
  try {
    await call;
  } catch (err) {
    return failureOf(err);
  }
  throw new Error("the call succeeded but was expected to fail");
}

/** `authorization: Bearer <token>` as call options. */
export function bearer(token: string): { headers: Record<string, string> } {
  return { headers: { authorization: `Bearer ${token}` } };
}

/**
 * Sends raw bytes as the request of a unary method (malformed messages no
 * client library would encode); resolves with the reply's bytes or rejects
 * with the call's status as a ConnectError.
 */
export function rawUnaryCall(address: string, path: string, bytes: Uint8Array): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const session = connect(`http://${address}`);
    session.on("error", reject);
    const stream = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers" });
    const chunks: Buffer[] = [];
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    const finish = (trailers: IncomingHttpHeaders) => {
      const code = Number(trailers["grpc-status"]);
      const body = Buffer.concat(chunks);
      session.close();
      if (code === 0) return resolve(body.subarray(5));
      const message = decodeURIComponent(String(trailers["grpc-message"] ?? ""));
      const raw = trailers["grpc-status-details-bin"];
      const details = raw ? fromBinary(StatusSchema, Buffer.from(String(raw), "base64")).details : [];
      const incoming = details.map((any) => ({ type: any.typeUrl.slice(any.typeUrl.lastIndexOf("/") + 1), value: any.value }));
      const failed = new ConnectError(message, code);
      failed.details.push(...incoming);
      reject(failed);
    };
    // An error before any reply comes "trailers-only": the status is in the response headers.
    stream.on("response", (headers) => {
      if (headers["grpc-status"] !== undefined) finish(headers);
    });
    stream.on("trailers", finish);
    stream.on("error", reject);
    const frame = Buffer.alloc(5 + bytes.length);
    frame.writeUInt32BE(bytes.length, 1);
    frame.set(bytes, 5);
    stream.end(frame);
  });
}

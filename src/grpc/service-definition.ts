import type { DescMessage, DescMethod, DescService, MessageShape } from "@bufbuild/protobuf";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import type { MethodDefinition, ServiceDefinition } from "@grpc/grpc-js";
import type { ReqlogError } from "../reqlog-error.js";
import { decodeMessage, messageTooLarge } from "../write/decode-message.js";

/**
 * What the server's deserializer hands a handler: the decoded message, or the
 * reason the bytes could not be decoded. Decoding never throws inside grpc-js
 * (which would answer INTERNAL); the handler answers INVALID_ARGUMENT instead.
 */
export type Decoded<T> = { ok: true; message: T } | { ok: false; error: ReqlogError };

export type ServerMethods = Record<string, MethodDefinition<Decoded<unknown>, unknown>>;

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * Requests smaller than this are decoded where they arrive even when their
 * method's may be decoded off the main thread: the hop to a worker would
 * cost more than decoding them.
 */
const offThreadFrom = 16 * 1024;

/** A request's message (or, for `raw`, a large one's bytes, decoded later off the main thread), within the size limit. */
function decodeRequest<Desc extends DescMessage>(
  schema: Desc,
  bytes: Buffer,
  maxBytes: number,
  raw: boolean,
): Decoded<MessageShape<Desc> | Uint8Array> {
  if (bytes.length > maxBytes) {
    return { ok: false, error: messageTooLarge(maxBytes, bytes.length) };
  }
  if (raw && bytes.length >= offThreadFrom) return { ok: true, message: bytes };
  try {
    return { ok: true, message: decodeMessage(schema, bytes) };
  } catch (err) {
    return { ok: false, error: err as ReqlogError };
  }
}

/** Path and stream kinds of a method, the same on both sides. */
function methodShape(method: DescMethod) {
  return {
    path: `/${method.parent.typeName}/${method.name}`,
    requestStream: method.methodKind === "client_streaming" || method.methodKind === "bidi_streaming",
    responseStream: method.methodKind === "server_streaming" || method.methodKind === "bidi_streaming",
  };
}

/**
 * The grpc-js service definition of a Buf service, for the server side:
 * requests decode into `Decoded` results (never throwing), those of the
 * `raw` methods to their bytes; responses encode with toBinary (which checks
 * required fields).
 */
export function serverDefinition(service: DescService, maxMessageBytes: number, raw: ReadonlySet<string> = new Set()): ServerMethods {
  const methods: ServerMethods = {};
  for (const method of service.methods) {
    methods[method.localName] = {
      ...methodShape(method),
      requestSerialize: () => {
        throw new Error("the server does not serialize requests");
      },
      requestDeserialize: (bytes: Buffer) => decodeRequest(method.input, bytes, maxMessageBytes, raw.has(method.localName)),
      responseSerialize: (message: unknown) =>
        asBuffer(toBinary(method.output, message as MessageShape<typeof method.output>)),
      responseDeserialize: () => {
        throw new Error("the server does not deserialize responses");
      },
    };
  }
  return methods;
}

/** How a client encodes requests and decodes replies. */
export interface ClientCodec {
  encode(schema: DescMessage, message: unknown): Uint8Array;
  decode(schema: DescMessage, bytes: Uint8Array): unknown;
}

const defaultCodec: ClientCodec = {
  encode: (schema, message) => toBinary(schema, message as MessageShape<DescMessage>),
  decode: (schema, bytes) => fromBinary(schema, bytes),
};

/** The grpc-js service definition of a Buf service, for clients (CLI, tests). */
export function clientDefinition(service: DescService, codec: ClientCodec = defaultCodec): ServiceDefinition {
  const methods: Record<string, MethodDefinition<unknown, unknown>> = {};
  for (const method of service.methods) {
    methods[method.localName] = {
      ...methodShape(method),
      requestSerialize: (message: unknown) => asBuffer(codec.encode(method.input, message)),
      requestDeserialize: (bytes: Buffer) => codec.decode(method.input, bytes),
      responseSerialize: (message: unknown) => asBuffer(codec.encode(method.output, message)),
      responseDeserialize: (bytes: Buffer) => codec.decode(method.output, bytes),
    };
  }
  return methods;
}

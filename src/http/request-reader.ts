import { promisify } from "node:util";
import { brotliDecompress, gunzip, type InputType, type ZlibOptions } from "node:zlib";
import { type DescMessage, fromJsonString } from "@bufbuild/protobuf";
import { createContextKey, createContextValues } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerRequest } from "@connectrpc/connect/protocol";
import type { Authorizer } from "../auth/authorizer.js";
import { ReqlogError } from "../reqlog-error.js";
import { decodeMessage, messageTooLarge } from "../write/decode-message.js";
import { headerMetadata } from "./header-metadata.js";
import { strictUtf8 } from "./strict-utf8.js";

/** A request as reqlog read it: the message, or why it was refused. */
export type ReadRequest = { message: unknown } | { error: ReqlogError };

/** Where a handler finds the request reqlog read in place of Connect (undefined: Connect read it). */
export const readRequestKey = createContextKey<ReadRequest | undefined>(undefined, { description: "reqlog's reading of the request" });

/** How a protocol frames a request's one message, and which header names its compression. */
interface Framing {
  enveloped: boolean;
  json: boolean;
  encodingHeader: string;
}

const framings: Record<string, Framing> = {
  "application/proto": { enveloped: false, json: false, encodingHeader: "content-encoding" },
  "application/json": { enveloped: false, json: true, encodingHeader: "content-encoding" },
  "application/connect+proto": { enveloped: true, json: false, encodingHeader: "connect-content-encoding" },
  "application/connect+json": { enveloped: true, json: true, encodingHeader: "connect-content-encoding" },
  "application/grpc": { enveloped: true, json: false, encodingHeader: "grpc-encoding" },
  "application/grpc+proto": { enveloped: true, json: false, encodingHeader: "grpc-encoding" },
  "application/grpc+json": { enveloped: true, json: true, encodingHeader: "grpc-encoding" },
  "application/grpc-web": { enveloped: true, json: false, encodingHeader: "grpc-encoding" },
  "application/grpc-web+proto": { enveloped: true, json: false, encodingHeader: "grpc-encoding" },
  "application/grpc-web+json": { enveloped: true, json: true, encodingHeader: "grpc-encoding" },
};

type Decompress = (input: InputType, options: ZlibOptions) => Promise<Buffer>;
const decompressors: Record<string, Decompress> = {
  gzip: promisify(gunzip) as Decompress,
  br: promisify(brotliDecompress) as Decompress,
};

/** The message's bytes read from the body, or undefined when the body holds more than `max` bytes. */
async function readUpTo(body: AsyncIterable<Uint8Array>, max: number): Promise<Buffer | undefined> {
  const parts: Uint8Array[] = [];
  let length = 0;
  for await (const part of body) {
    length += part.byteLength;
    if (length > max) return undefined;
    parts.push(part);
  }
  return Buffer.concat(parts, length);
}

/** One envelope (flags, big-endian length, message) holding the whole body; undefined when it is framed otherwise. */
function unwrap(body: Buffer): { compressed: boolean; message: Buffer } | undefined {
  if (body.length < 5 || (body[0]! & ~1) !== 0 || body.readUInt32BE(1) !== body.length - 5) return undefined;
  return { compressed: (body[0]! & 1) === 1, message: body.subarray(5) };
}

function wrap(message: Uint8Array): Uint8Array {
  const out = Buffer.alloc(5 + message.length);
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

async function* bodyOf(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

export interface RequestReaderOptions {
  auth: Authorizer;
  /** max-message-bytes: a larger message is refused naming it, as on the gRPC port. */
  maxMessageBytes: number;
}

/**
 * Makes reqlog, not Connect, read the one request of unary and
 * server-streaming calls on the HTTP port, so they are answered as the gRPC
 * port answers them: the caller is identified before the body is read or
 * decompressed (an unknown caller's body is never read: the call then
 * fails UNAUTHENTICATED as it would anyway), a message over
 * max-message-bytes is RESOURCE_EXHAUSTED naming the limit (Connect said
 * 429 with no limit), bytes that do not decode or text that is not UTF-8
 * are INVALID_ARGUMENT (Connect answered INTERNAL, and read JSON's invalid
 * UTF-8 as U+FFFD), and all of it only after authentication, counted with
 * the calls. Connect is handed an empty message in the same framing; the
 * handler takes reqlog's from `readRequestKey`. Decompression is bounded
 * (a gzip bomb stops at twice the limit). Bodies framed in ways this does
 * not know are left to Connect.
 */
export function readRequestsFirst(handlers: UniversalHandler[], options: RequestReaderOptions): void {
  const cap = options.maxMessageBytes * 2;
  const tooLarge = (size: number | undefined) => messageTooLarge(options.maxMessageBytes, size ?? `more than ${cap}`);

  function wrapHandler(handler: UniversalHandler): UniversalHandler {
    const input: DescMessage = handler.method.input;
    const read = async (request: UniversalServerRequest): Promise<UniversalServerRequest> => {
      const type = (request.header.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
      const framing = framings[type];
      if (request.method !== "POST" || !framing || !(Symbol.asyncIterator in Object(request.body))) return request;
      const encoding = request.header.get(framing.encodingHeader) ?? "identity";
      const decompress = decompressors[encoding];
      if (encoding !== "identity" && !decompress) return request; // Connect refuses it, naming what it accepts
      const empty = new TextEncoder().encode(framing.json ? "{}" : "");
      const header = new Headers(request.header);
      // Connect checks the body it is handed against these.
      header.delete("content-length");
      if (!framing.enveloped) header.delete(framing.encodingHeader);
      const handOver = (outcome: ReadRequest | undefined): UniversalServerRequest => {
        const contextValues = request.contextValues ?? createContextValues();
        contextValues.set(readRequestKey, outcome);
        return { ...request, header, body: bodyOf(framing.enveloped ? wrap(empty) : empty), contextValues };
      };
      // An unknown caller's body is not read: the call fails as it would anyway, UNAUTHENTICATED.
      if (!(await options.auth.identify(headerMetadata(request.header)))) return handOver(undefined);

      const body = await readUpTo(request.body as AsyncIterable<Uint8Array>, cap);
      if (!body) return handOver({ error: tooLarge(undefined) });
      const unwrapped = framing.enveloped ? unwrap(body) : { compressed: encoding !== "identity", message: body };
      if (!unwrapped) return { ...request, body: bodyOf(body) }; // framed otherwise: Connect says how
      let bytes = unwrapped.message;
      if (unwrapped.compressed) {
        try {
          bytes = await decompress!(bytes, { maxOutputLength: cap });
        } catch (err) {
          const bomb = (err as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE";
          return handOver({
            error: bomb ? tooLarge(undefined) : ReqlogError.invalid(`cannot decompress the request (${encoding}): ${(err as Error).message}`),
          });
        }
      }
      if (bytes.length > options.maxMessageBytes) return handOver({ error: tooLarge(bytes.length) });
      try {
        if (!framing.json) return handOver({ message: decodeMessage(input, bytes) });
        const text = strictUtf8(bytes);
        if (text === undefined) throw ReqlogError.invalid(`cannot decode ${input.typeName} from JSON: the body is not UTF-8`);
        try {
          return handOver({ message: fromJsonString(input, text, { ignoreUnknownFields: true }) });
        } catch (err) {
          throw ReqlogError.invalid(`cannot decode ${input.typeName} from JSON: ${err instanceof Error ? err.message : err}`);
        }
      } catch (err) {
        return handOver({ error: err as ReqlogError });
      }
    };
    const wrapped = async (request: UniversalServerRequest) => handler(await read(request));
    return Object.assign(wrapped, {
      method: handler.method,
      service: handler.service,
      requestPath: handler.requestPath,
      protocolNames: handler.protocolNames,
      allowedMethods: handler.allowedMethods,
      supportedContentType: handler.supportedContentType,
    }) as UniversalHandler;
  }

  for (let i = 0; i < handlers.length; i++) {
    const handler = handlers[i]!;
    const kind = handler.method.methodKind;
    if (kind === "unary" || kind === "server_streaming") handlers[i] = wrapHandler(handler);
  }
}
